"""SHELL: the placement ledger in a JetStream KV bucket: one key per capped queue, each instance's
announcement of the member set it plans under, and what each shard's owner publishes of the shard
(shard_records.py).

A queue's capability holds for the pods of every instance, so a gang in a capped queue is reserved
there before it binds, whoever owns its nodes (nodes have one writer each and need no ledger:
lending.py). Every instance follows the bucket (to start each compare-and-set from a fresh copy, and
for the announcements) and writes a record only with `update(last=revision)`. A lost race re-reads and
re-checks (a retry); a reservation that no longer fits is a conflict.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import msgspec
import structlog
from nats.js.errors import BadRequestError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from vc_bus.buckets import open_bucket
from vc_bus.decoding import decode_or_none, report_undecodable
from vc_bus.kvwatch import watch_bucket
from vc_core.errors import Conflict, Fenced
from vc_core.resources import Resources
from vc_core.store import WatchOp
from vc_proto import subjects
from vc_runtime.aio import until
from vc_scheduler import ledger
from vc_scheduler.ledger import Outcome, Record, Reservation, View
from vc_scheduler.metrics import LEDGER_CONFLICTS, LEDGER_RETRIES, LEDGER_WRITES
from vc_scheduler.shard_records import AWAY_PREFIX, SUMS_PREFIX

log = structlog.get_logger(__name__)
BUCKET: Final = "vc-sched-ledger"
MAX_ATTEMPTS: Final = 16
# Each instance's announcement of the member set it plans under (share.Partition), one key per instance.
ANNOUNCE_PREFIX: Final = "plans."
MAX_ANNOUNCED_MEMBERS: Final = 1024
RECORD_PREFIXES: Final = (SUMS_PREFIX, AWAY_PREFIX)
# How long a try on a key read fresh waits for the followed copy to reach it (_caught_up).
CATCH_UP_S: Final = 5.0
WRONG_LAST_SEQUENCE: Final = 10071  # JetStream's error code for a delete whose expected revision is not the key's


QUEUE_PREFIX: Final = "queue."


def queue_key(queue: str) -> str:
    return f"{QUEUE_PREFIX}{subjects.escape_token(queue)}"


def announce_key(instance: str) -> str:
    return f"{ANNOUNCE_PREFIX}{subjects.escape_token(instance)}"


class Announcement(msgspec.Struct, frozen=True):
    """The member set an instance plans under (share.Partition), and when it announced it (wall clock)."""

    members: tuple[str, ...]
    at: float
    revision: int = 0  # the key's revision, as followed (not stored)
    # The pods stream's revision when it was made: every bind the instance made on the nodes it gave up
    # is at or before it (peers.Several).
    pods_revision: int = 0


class _Announced(msgspec.Struct, frozen=True):
    members: list[str]
    at: float
    pods: int = 0


_announced_decoder = msgspec.json.Decoder(_Announced)


def decode_announcement(data: bytes | None, revision: int) -> Announcement | None:
    """An announcement; None (reported by the caller) when the value is not one: it then claims nothing."""
    try:
        value = _announced_decoder.decode(data or b"")
    except ValueError:
        return None
    if len(value.members) > MAX_ANNOUNCED_MEMBERS or any(not 0 < len(m) <= 253 for m in value.members):
        return None
    if value.pods < 0:
        return None
    return Announcement(tuple(sorted(set(value.members))), value.at, revision, value.pods)


Change = Callable[[Record], Outcome]


@dataclass(slots=True)
class _Copy:
    record: Record
    revision: int  # 0: the key does not exist


class Ledger:
    def __init__(
        self,
        js: Any,
        *,
        instance: str,
        can_write: Callable[[], bool],
        clock: Callable[[], float] = time.time,
        replicas: int = 1,
        on_record: Callable[[str, bytes | None], bool] = lambda _key, _value: True,
    ) -> None:
        """`on_record`: hands on a shard record as the bucket's watch delivers it (None: deleted); False
        for a value that is not a record (reported here)."""
        self._js = js
        self._on_record = on_record
        self._replicas = replicas
        self.instance = instance
        self._can_write = can_write
        self._clock = clock
        self._kv: KeyValue | None = None
        self._copies: dict[str, _Copy] = {}
        # Changes waiting for the next write of a key, and the task writing it (see _cas).
        self._pending: dict[str, list[tuple[Change, bool, asyncio.Future[Outcome]]]] = {}
        self._flushers: dict[str, asyncio.Task[None]] = {}
        self.synced = asyncio.Event()
        self.changed = asyncio.Event()  # another instance's announcement changed (the loop's idle gate reads it)
        # The member set each instance announced it plans under (share.Partition), and the watch's
        # position, which announce() waits for.
        self.announced: dict[str, Announcement] = {}
        self.announcements = asyncio.Event()  # set when another instance's announcement changes
        self._revision = 0
        self._waiting: list[tuple[int, asyncio.Future[None]]] = []

    async def open(self) -> KeyValue:
        if self._kv is None:
            self._kv = await open_bucket(self._js, BUCKET, replicas=self._replicas)
        return self._kv

    # -- the followed copy -------------------------------------------------------------------------
    async def follow(self, shutdown: asyncio.Event) -> None:
        await self.open()
        # Raw KV, not an Informer: entries are reservations, and each CAS starts from the entry's revision.
        async for entry in until(shutdown, watch_bucket(self._js, BUCKET)):
            if entry.op is WatchOp.SYNCED:
                self.synced.set()
                continue
            self._advance(entry.revision)
            if entry.key.startswith(ANNOUNCE_PREFIX):
                self._announcement(entry.key, None if entry.op is WatchOp.DELETE else entry.value, entry.revision)
                continue
            if entry.key.startswith(RECORD_PREFIXES):
                if not self._on_record(entry.key, None if entry.op is WatchOp.DELETE else entry.value):
                    report_undecodable(
                        source=BUCKET,
                        kind="ShardRecord",
                        error="not a valid record",
                        key=entry.key,
                        revision=entry.revision,
                    )
                continue
            known = self._copies.get(entry.key)
            if known is not None and known.revision >= entry.revision:
                continue  # our own write, already applied
            if entry.op is WatchOp.DELETE:
                self._copies.pop(entry.key, None)
            else:
                self._copies[entry.key] = _Copy(self._decode(entry.value, entry.key, entry.revision), entry.revision)

    # -- announcements -----------------------------------------------------------------------------
    async def announce(self, members: tuple[str, ...], *, pods_revision: int = 0) -> None:
        """Announce the member set this instance plans under, and return once the followed copy shows
        it: every announcement written before it is then known too (the bucket is one ordered stream)."""
        kv = await self.open()
        value = msgspec.json.encode(_Announced(list(members), self._clock(), pods_revision))
        revision = await kv.put(announce_key(self.instance), value)
        if self._revision >= revision:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((revision, waiter))
        await waiter

    async def retract(self, instance: str, revision: int | None = None) -> None:
        """Remove an instance's announcement: this instance's own as it stops, or (`revision` given, so a
        newer announcement of a restarted instance stays) one of an instance that left long ago."""
        kv = await self.open()
        try:
            await kv.delete(announce_key(instance), last=revision)
        except BadRequestError as exc:
            if exc.err_code != WRONG_LAST_SEQUENCE:
                raise  # announced again meanwhile (wrong last sequence): it stays

    async def write_records(self, records: list[tuple[str, bytes | None]]) -> list[str]:
        """Write this instance's shard records (value None: delete one), all at once; the keys whose
        write failed (all of them, fenced: its membership may have lapsed). Each shard has one writer,
        its owner, so a record is put, not compared and set."""
        if not self._can_write():
            return [key for key, _ in records]
        kv = await self.open()

        async def write(key: str, value: bytes | None) -> None:
            if value is None:
                await kv.delete(key)
            else:
                await kv.put(key, value)

        done = await asyncio.gather(*(write(key, value) for key, value in records), return_exceptions=True)
        failed = [(key, result) for (key, _), result in zip(records, done, strict=True) if result is not None]
        if failed:
            log.warning("ledger.shard_records_unwritten", count=len(failed), error=repr(failed[0][1]))
        return [key for key, _ in failed]

    def _announcement(self, key: str, value: bytes | None, revision: int) -> None:
        instance = subjects.unescape_token(key.removeprefix(ANNOUNCE_PREFIX))
        made = decode_announcement(value, revision) if value is not None else None
        if value is not None and made is None:
            log.warning("ledger.announcement_undecodable", key=key, revision=revision)
        before = self.announced.get(instance)
        if made is None:
            self.announced.pop(instance, None)
        else:
            self.announced[instance] = made
        if instance != self.instance and (before.members if before else None) != (made.members if made else None):
            self.announcements.set()
            self.changed.set()  # which nodes this instance may plan on changed: a cycle is needed

    def _advance(self, revision: int) -> None:
        self._revision = max(self._revision, revision)
        if self._waiting:
            done = [(r, f) for r, f in self._waiting if r <= self._revision]
            self._waiting = [(r, f) for r, f in self._waiting if r > self._revision]
            for _, future in done:
                if not future.done():
                    future.set_result(None)

    @staticmethod
    def _decode(data: bytes | None, key: str, revision: int) -> Record:
        """A ledger value, or (reported) an empty record in place of one that is not a record: its
        reservations cannot be read by anyone, and the next compare-and-set on its revision replaces
        it with a valid record (reservations are soft state; the binds stay fenced by the store)."""
        record = decode_or_none(
            ledger.decode, data or b"", source=BUCKET, kind="LedgerRecord", key=key, revision=revision
        )
        return record if record is not None else Record()

    def records(self) -> list[tuple[str, Record]]:
        """(key, record) of every ledger key in the followed copy."""
        return [(key, copy.record) for key, copy in self._copies.items()]

    def record(self, key: str) -> Record:
        copy = self._copies.get(key)
        return copy.record if copy else Record()

    # -- compare-and-set ---------------------------------------------------------------------------
    async def reserve(
        self,
        key: str,
        new: Mapping[str, Reservation],
        capacity: Mapping[str, Fraction],
        occupying: Callable[[], Mapping[str, Resources]],
        view: View,
        *,
        node: str | None,
    ) -> Outcome:
        """Add the reservations if they fit; Outcome.record is None on a conflict. `occupying` says what
        occupies the key's queue or node as each try decides (View.occupying_queue: what it counts of the
        other instances is read from this bucket, as far as the try's copy of the key)."""

        def change(record: Record) -> Outcome:
            return ledger.try_reserve(
                record, new, capacity, occupying(), view, self._clock(), node=node, unlimited_missing=node is None
            )

        outcome = await self._cas(key, change, fresh_on_reject=True)
        if outcome.record is None:
            LEDGER_CONFLICTS.labels(self.instance, "node" if node is not None else "queue").inc()
        return outcome

    async def add_bound(self, key: str, reservations: Mapping[str, Reservation]) -> None:
        """Add reservations whatever the key's usage (pods already bound or being bound: see solo.py)."""

        def change(record: Record) -> Outcome:
            missing = {uid: r for uid, r in reservations.items() if uid not in record.reservations}
            return Outcome(Record({**record.reservations, **missing}) if missing else record, 0)

        await self._cas(key, change, fresh_on_reject=False)

    async def release(self, key: str, uids: Iterable[str]) -> None:
        drop = frozenset(uids)

        def change(record: Record) -> Outcome:
            return Outcome(ledger.release(record, drop), 0)

        await self._cas(key, change, fresh_on_reject=False)

    async def prune(self, key: str, view: View, *, node: str | None) -> int:
        def change(record: Record) -> Outcome:
            pruned = ledger.prune(record, view, self._clock(), node=node)
            return Outcome(pruned, len(record.reservations) - len(pruned.reservations))

        return (await self._cas(key, change, fresh_on_reject=False)).pruned

    async def _cas(self, key: str, change: Change, *, fresh_on_reject: bool) -> Outcome:
        """Group commit: changes to one key that arrive while a write of it is under way are applied
        together in the next single compare-and-set (gangs favour the same nodes; one round trip
        per change would serialise them)."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(key, []).append((change, fresh_on_reject, future))
        if key not in self._flushers:
            task = asyncio.create_task(self._flush(key), name=f"ledger:{key}")
            self._flushers[key] = task
        return await future

    async def _flush(self, key: str) -> None:
        try:
            while batch := self._pending.pop(key, None):
                try:
                    outcomes = await self._cas_batch(key, [(c, f) for c, f, _ in batch])
                except Exception as exc:  # every waiter of the batch learns it
                    for _, _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, _, future), outcome in zip(batch, outcomes, strict=True):
                    if not future.done():
                        future.set_result(outcome)
        finally:
            self._flushers.pop(key, None)

    async def _cas_batch(self, key: str, changes: list[tuple[Change, bool]]) -> list[Outcome]:
        kv = await self.open()
        copy = self._copies.get(key) or _Copy(Record(), -1)  # -1: unknown, read it
        reread, fresh = copy.revision < 0, False
        for _ in range(MAX_ATTEMPTS):
            if reread:
                copy, reread, fresh = await self._read(kv, key), False, True
                await self._caught_up(key, copy.revision)
            record, outcomes = copy.record, []
            for change, _ in changes:
                outcome = change(record)
                if outcome.record is not None:
                    record = outcome.record  # later changes of the batch see earlier ones
                outcomes.append(outcome)
            if not fresh and any(o.record is None and f for o, (_, f) in zip(outcomes, changes, strict=True)):
                reread = True  # the followed copy may lag (entries since pruned): decide on a fresh read
                continue
            if record == copy.record:
                return outcomes  # nothing to write
            if not self._can_write():
                raise Fenced(f"ledger {key}")
            data = ledger.encode(record)
            try:
                if copy.revision == 0:
                    revision = await kv.create(key, data)
                else:
                    revision = await kv.update(key, data, last=copy.revision)
            except KeyWrongLastSequenceError:
                LEDGER_RETRIES.labels(self.instance).inc()
                reread = True
                continue
            LEDGER_WRITES.labels(self.instance).inc()
            known = self._copies.get(key)
            if known is None or known.revision < revision:
                self._copies[key] = _Copy(record, revision)
            return outcomes
        # Lost MAX_ATTEMPTS races in a row: temporary, the gang is planned again.
        raise Conflict("ledger", key, expected=copy.revision)

    async def _caught_up(self, key: str, revision: int) -> None:
        """Return once the followed copy has read the bucket up to `revision` (a key read fresh): what a
        decision on it counts of the other instances, their shard records, is then at least as new as
        the key. An instance writes its records before it takes back the reservations they count
        (peers.Several.publish), so a try never misses a pod both ways; a Conflict after CATCH_UP_S."""
        if self._revision >= revision:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((revision, waiter))
        try:
            async with asyncio.timeout(CATCH_UP_S):
                await waiter
        except TimeoutError:
            self._waiting = [(r, f) for r, f in self._waiting if f is not waiter]
            raise Conflict("ledger", key, expected=revision) from None

    async def _read(self, kv: KeyValue, key: str) -> _Copy:
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:
            return _Copy(Record(), 0)
        copy = _Copy(self._decode(entry.value, key, entry.revision or 0), entry.revision or 0)
        known = self._copies.get(key)
        if known is None or known.revision < copy.revision:
            self._copies[key] = copy
        return copy

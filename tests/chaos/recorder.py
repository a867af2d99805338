"""Records every acknowledged write to the object buckets, in store order, for the history checker.

The KV buckets keep one revision per key, so a watcher that falls behind never sees the revisions
overwritten meanwhile (a bind, then a quick failure). The recorder therefore has the server
republish every stored message at store time (JetStream's RePublish on each bucket's stream, added
after the services created their buckets, replica count and all; what the services read and write
is untouched) and subscribes to those copies on every server of the cluster at once, so losing one
server (or the recorder's connection to it) loses no copy.

Each copy carries its bucket revision, the key's previous revision and the store time. Revisions
of a bucket are contiguous, so the recorder puts copies in order, and when one is missing (every
connection was down when it was republished) it reads it back from the bucket's stream; if it was
overwritten meanwhile it is recorded as a gap, and the checker says the history is incomplete.

(Republishing into a stream of our own does not work: the copies keep the writer's
`Nats-Expected-Last-Subject-Sequence` header, and that stream then refuses every update.)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import msgspec
import nats
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api
from nats.js.client import JetStreamContext
from nats.js.errors import NotFoundError
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE

from tests.chaos import facts
from tests.chaos.history import RECORDED_KINDS, Change, Gap, History, Rollback, Survey
from vc_proto.subjects import bucket

REC_PREFIX = "chaosrec"
T = TypeVar("T")
BATCH = 1024
REPAIR_AFTER_S = 1.0  # a copy missing this long is read back from the bucket's stream
STREAM_OF = {kind: f"KV_{bucket(kind)}" for kind in RECORDED_KINDS}
KIND_OF = {stream: kind for kind, stream in STREAM_OF.items()}
MIRROR_OF = {stream: f"CHAOS_{stream.replace('-', '_')}" for stream in STREAM_OF.values()}


def store_time(stamp: str) -> float:
    """JetStream's RFC 3339 time with nanoseconds, as seconds since the epoch."""
    head, _, rest = stamp.rstrip("Z").partition(".")
    fraction = (rest + "000000")[:6] if rest else "0"
    return datetime.fromisoformat(f"{head}.{fraction}+00:00").timestamp()


async def _quiet(_: Exception) -> None:
    """nats-py prints a traceback per failed reconnect by default; a chaos run expects them."""


async def connect_to(urls: list[str], name: str) -> Client:
    return await nats.connect(
        servers=urls,
        name=name,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        connect_timeout=2,
        allow_reconnect=True,
        error_cb=_quiet,
    )


class Recorder:
    def __init__(self, url: str, history: History, *, note: Callable[[str], None] = print) -> None:
        self.urls = url.split(",")
        self.history = history
        self.note = note
        self.nc: Client | None = None  # for JetStream requests (any server)
        self.listeners: list[Client] = []  # one per server, each pinned to it
        self.last: dict[str, int] = dict.fromkeys(RECORDED_KINDS, 0)  # bucket revision recorded last
        self.key_last: dict[str, dict[str, int]] = {k: {} for k in RECORDED_KINDS}
        self.early: dict[str, dict[int, tuple[float, Msg | None, dict[str, Any]]]] = {k: {} for k in RECORDED_KINDS}
        self.held: list[Msg] | None = None  # while a survey or rollback looks at the store, copies wait here
        self.jobs: dict[str, str] = {}  # job key -> phase ("deleted" when gone)
        self.nodes: set[str] = set()
        self.copies = 0

    @property
    def js(self) -> JetStreamContext:
        assert self.nc is not None
        return self.nc.jetstream(timeout=10)

    # -- set-up ------------------------------------------------------------------------------------
    async def install(self) -> None:
        """Listen on every server, republish every bucket from now on, record what the buckets hold."""
        self.nc = await connect_to(self.urls, "chaos-recorder")
        for url in self.urls:
            listener = await connect_to([url], f"chaos-recorder:{url}")
            await listener.subscribe(f"{REC_PREFIX}.>", cb=self._copy, pending_msgs_limit=-1, pending_bytes_limit=-1)
            await listener.flush()
            self.listeners.append(listener)
        self.held = []  # copies of writes the backfill below reads: ordered after it
        for stream in STREAM_OF.values():
            await _retrying(lambda s=stream: self._republish_and_mirror(s))
        for kind, stream in STREAM_OF.items():
            head = await _retrying(lambda s=stream: self.js.stream_info(s))
            await _retrying(lambda k=kind, s=stream, u=head.state.last_seq: self._backfill(k, s, upto=u))
        self._release()

    async def _republish_and_mirror(self, stream: str) -> None:
        info = await self.js.stream_info(stream)
        if info.config.republish is None:
            info.config.republish = api.RePublish(src=">", dest=f"{REC_PREFIX}.>")
            await self.js.update_stream(info.config)
        # The server mirrors the bucket too (every revision, kept): where a copy is missing (no listener
        # was connected, e.g. right after a restart) the mirror still has it.
        mirror = api.StreamConfig(
            name=MIRROR_OF[stream],
            storage=api.StorageType.FILE,
            num_replicas=info.config.num_replicas,
            mirror=api.StreamSource(name=stream),
        )
        await self.js.add_stream(mirror)

    async def listening(self, limit_s: float = 60.0) -> None:
        """Until every listener is connected again and its subscription is in place on its server."""
        deadline = time.monotonic() + limit_s
        for listener in self.listeners:
            while True:
                try:
                    if listener.is_connected:
                        await listener.flush(timeout=2)  # the server has our subscription (a round trip)
                        break
                except (nats.errors.Error, TimeoutError, OSError):
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("the recorder's listeners did not reconnect")
                await asyncio.sleep(0.05)

    async def close(self) -> None:
        for client in [*self.listeners, *([self.nc] if self.nc else [])]:
            with contextlib.suppress(Exception):
                await client.close()

    async def _backfill(self, kind: str, stream: str, *, upto: int) -> None:
        """Record a bucket's stream from the last recorded revision up to `upto` (what is still there)."""
        start = self.last[kind] + 1
        if upto < start:
            return
        prefix = f"$KV.{bucket(kind)}."
        config = api.ConsumerConfig(
            ack_policy=api.AckPolicy.NONE,
            mem_storage=True,
            inactive_threshold=30.0,
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=start,
        )
        psub = await self.js.pull_subscribe(f"{prefix}>", stream=stream, config=config)
        try:
            while self.last[kind] < upto:
                try:
                    msgs = await psub.fetch(BATCH, timeout=2)
                except TimeoutError:
                    break
                for msg in msgs:
                    seq = msg.metadata.sequence.stream
                    if seq > upto:
                        break
                    at = msg.metadata.timestamp.timestamp() if msg.metadata.timestamp else time.time()
                    key = msg.subject[len(prefix) :]
                    self._record(kind, seq, key, _op(msg.headers), msg.data, at, self.key_last[kind].get(key, 0))
        finally:
            with contextlib.suppress(Exception):
                await psub.unsubscribe()
        self.last[kind] = max(self.last[kind], upto)

    # -- the copies --------------------------------------------------------------------------------
    async def _copy(self, msg: Msg) -> None:
        self.copies += 1
        if self.held is not None:
            self.held.append(msg)
        else:
            self._take(msg)

    def _take(self, msg: Msg) -> None:
        headers = msg.headers or {}
        kind = KIND_OF.get(headers.get("Nats-Stream", ""))
        if kind is None:
            return
        seq = int(headers["Nats-Sequence"])
        if seq <= self.last[kind] or seq in self.early[kind]:
            return  # recorded already (the copy from another server, or read back)
        self.early[kind][seq] = (time.monotonic(), msg, dict(headers))
        self._drain(kind)

    def _drain(self, kind: str) -> None:
        """Record the copies that continue the bucket's revisions, in order."""
        early = self.early[kind]
        while (item := early.pop(self.last[kind] + 1, None)) is not None:
            _, msg, headers = item
            key = headers["Nats-Subject"][len(f"$KV.{bucket(kind)}.") :]
            data = msg.data if msg is not None else headers.pop("_data", b"")
            previous = int(headers.get("Nats-Last-Sequence") or self.key_last[kind].get(key, 0))
            at = store_time(headers["Nats-Time-Stamp"]) if "Nats-Time-Stamp" in headers else float(headers["_at"])
            self._record(kind, int(headers["Nats-Sequence"]), key, _op(headers), data, at, previous)

    async def repair(self, stop: asyncio.Event) -> None:
        """Read back, from the bucket's stream, revisions whose copy never came."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    await stop.wait()
            if self.held is None:
                await self.fill_missing(older_than=REPAIR_AFTER_S)

    async def fill_missing(self, *, older_than: float = 0.0, upto: Mapping[str, int] | None = None) -> None:
        """Read back the revisions below the first copy that waits for them (or up to `upto`)."""
        now = time.monotonic()
        for kind, stream in STREAM_OF.items():
            early = self.early[kind]
            end = max(min(early) - 1 if early else 0, (upto or {}).get(kind, 0))
            if not early and end <= self.last[kind]:
                continue
            if early and now - min(t for t, _, _ in early.values()) < older_than:
                continue
            for seq in range(self.last[kind] + 1, end + 1):
                if seq <= self.last[kind]:
                    continue  # came in order meanwhile
                try:
                    raw = await self._read_back(stream, seq)
                except NotFoundError:  # overwritten before any copy reached us or the mirror had it
                    self.history.gaps.append(Gap(kind, seq, "overwritten before any copy or the mirror had it"))
                    self.last[kind] = seq
                    continue
                except (nats.errors.Error, TimeoutError, OSError):
                    return  # the server is away: try again on the next round
                headers = {
                    **(raw.headers or {}),
                    "Nats-Sequence": str(seq),
                    "Nats-Subject": raw.subject or "",
                    "_data": raw.data or b"",
                    "_at": str(raw.time.timestamp() if raw.time else time.time()),
                }
                headers.pop("Nats-Last-Sequence", None)
                early[seq] = (now, None, headers)
                self._drain(kind)
            self._drain(kind)

    async def _read_back(self, stream: str, seq: int) -> Any:
        """A revision from the mirror (which keeps every one), else from the bucket's own stream."""
        try:
            return await self.js.get_msg(MIRROR_OF[stream], seq)
        except NotFoundError:
            return await self.js.get_msg(stream, seq)

    def _record(self, kind: str, seq: int, key: str, op: str, data: bytes, at: float, previous: int) -> None:
        known = self.key_last[kind].get(key, 0)
        if previous != known:
            self.history.gaps.append(
                Gap(kind, seq, f"it follows rev {previous} of its key, the record has {known}", key)
            )
        obj = _decode(data) if op == "put" else None
        self.history.records.append(Change(kind, seq, key, op, obj, at, previous))  # type: ignore[arg-type]
        self.key_last[kind][key] = seq
        self.last[kind] = seq
        if kind == "Job":
            self.jobs[key] = "deleted" if op == "delete" else facts.job_phase(obj or {})
        elif kind == "Node" and op == "put":
            self.nodes.add(key)

    def _hold(self) -> None:
        self.held = []

    def _release(self) -> None:
        held, self.held = self.held or [], None
        for msg in held:
            self._take(msg)

    # -- after a server restart ----------------------------------------------------------------------
    async def survey(self, why: str, *, attempts: int = 40) -> None:
        """Each key's newest revision as the store now has it (the checker compares with the record).
        Copies wait meanwhile, so everything recorded was stored before the survey looked."""
        self._hold()
        try:
            await self.fill_missing()
            for kind, stream in STREAM_OF.items():
                for attempt in range(attempts):
                    try:
                        newest = await self._confirmed(kind, stream, await self._newest(kind, stream))
                        break
                    except Exception:  # a cluster still electing leaders: ask again
                        if attempt == attempts - 1:
                            raise
                        await asyncio.sleep(0.5)
                self.history.records.append(Survey(kind, newest, time.time(), why))
        finally:
            self._release()

    async def _newest(self, kind: str, stream: str) -> dict[str, int]:
        prefix = f"$KV.{bucket(kind)}."
        config = api.ConsumerConfig(
            ack_policy=api.AckPolicy.NONE,
            mem_storage=True,
            inactive_threshold=30.0,
            deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
        )
        psub = await self.js.pull_subscribe(f"{prefix}>", stream=stream, config=config)
        newest: dict[str, int] = {}
        try:
            pending = (await psub.consumer_info()).num_pending
            while len(newest) < pending:
                for msg in await psub.fetch(BATCH, timeout=5):
                    newest[msg.subject[len(prefix) :]] = msg.metadata.sequence.stream
        finally:
            with contextlib.suppress(Exception):
                await psub.unsubscribe()
        return newest

    async def _confirmed(self, kind: str, stream: str, newest: dict[str, int]) -> dict[str, int]:
        """Ask the stream's leader about every key the survey found older than the record: a consumer
        may read a replica that is still catching up (a server just restarted), the leader has every
        acknowledged write."""
        subject = f"$KV.{bucket(kind)}."
        for key, recorded in self.key_last[kind].items():
            if newest.get(key, 0) >= recorded:
                continue
            try:
                newest[key] = (await self.js.get_last_msg(stream, subject + key)).seq or 0
            except NotFoundError:
                newest[key] = 0
        return newest

    async def stream_heads(self) -> dict[str, int]:
        heads = {kind: await _retrying(lambda s=stream: self.js.stream_info(s)) for kind, stream in STREAM_OF.items()}
        return {kind: info.state.last_seq for kind, info in heads.items()}

    async def rolled_back(self, synced: Mapping[str, int], why: str) -> None:
        """The store was restored to an older copy (the servers are up again, the services still down):
        record what each bucket lost, take up what the recorder had not seen yet, and survey."""
        self._hold()
        try:
            for kind, stream in STREAM_OF.items():
                kept = (await _retrying(lambda s=stream: self.js.stream_info(s))).state.last_seq
                self.early[kind] = {}  # copies of the lost interval that never got in order
                if kept < self.last[kind]:
                    self.history.records.append(Rollback(kind, kept, synced[kind], time.time()))
                    self._forget_after(kind, kept)
                elif kept > self.last[kind]:
                    await _retrying(lambda k=kind, s=stream, u=kept: self._backfill(k, s, upto=u))
        finally:
            self._release()
        await self.survey(why)

    def _forget_after(self, kind: str, kept: int) -> None:
        self.last[kind] = kept
        latest: dict[str, int] = {}
        jobs: dict[str, str] = {}
        for record in self.history.records:  # what each key held at `kept`, in the branch that survived
            if isinstance(record, Rollback) and record.kind == kind:
                latest = {k: s for k, s in latest.items() if s <= record.kept}
            elif isinstance(record, Change) and record.kind == kind and record.seq <= kept:
                latest[record.key] = record.seq
                if kind == "Job":
                    jobs[record.key] = "deleted" if record.op == "delete" else facts.job_phase(record.obj or {})
        self.key_last[kind] = latest
        if kind == "Job":
            self.jobs = jobs

    async def final_check(self, *, settle_s: float = 10.0) -> None:
        """At the end (the services stopped): every key's newest revision in the store must be one the
        recorder has, once the copies still on their way have arrived."""
        newest: dict[str, dict[str, int]] = {}
        self._hold()
        try:
            for kind, stream in STREAM_OF.items():
                # Only newer than the record matters here. A cluster may still be electing a leader for
                # the survey's consumer (a 503 on its fetch): ask again, as every survey does.
                newest[kind] = await _retrying(functools.partial(self._newest, kind, stream))
        finally:
            self._release()
        deadline = time.monotonic() + settle_s
        heads = {kind: max(keys.values(), default=0) for kind, keys in newest.items()}
        while True:
            await asyncio.sleep(0.2)  # copies on their way
            await self.fill_missing(upto=heads)
            missing = [
                (kind, key, seq)
                for kind, keys in newest.items()
                for key, seq in sorted(keys.items())
                if seq > self.key_last[kind].get(key, 0)
            ]
            if not missing or time.monotonic() > deadline:
                break
        for kind, key, seq in missing:
            self.history.gaps.append(Gap(kind, seq, "the store ends on it, the record never saw it", key))


async def _retrying(call: Callable[[], Awaitable[T]], *, attempts: int = 60) -> T:
    """A JetStream request while a cluster elects leaders (or a server restarts) may fail: ask again."""
    for _ in range(attempts - 1):
        try:
            return await call()
        except (nats.errors.Error, TimeoutError, OSError):
            await asyncio.sleep(0.5)
    return await call()


def _op(headers: Mapping[str, str] | None) -> str:
    return "delete" if (headers or {}).get(KV_OP) in (KV_DEL, KV_PURGE) else "put"


def _decode(data: bytes) -> dict[str, Any] | None:
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None

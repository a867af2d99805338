"""SHELL: what one scheduler instance says to and knows of the others, as its loop and binder need it:
the member set it plans under and the partition that follows (share.Partition), where it may commit,
who owns a node it would borrow, and the loans it granted on its own nodes (lending.py). Two
implementations behind one port:

- `Alone`: no other instance can run (no ledger): the partition is the whole cluster;
- `Several`: announcements of the member sets each instance plans under, in the ledger bucket
  (ledger_kv.Ledger). It also serves an instance that is alone for now: others may join.

A node changes owner only once its old owner has nothing in flight there: an instance that sees a new
member (and so loses nodes) stops committing on its nodes and granting loans, waits until its binder has
no gang in flight, its cache shows every bind it wrote, and every loan it granted is bound or gone, and
only then announces the new set, with how far its cache has followed the pods stream. Another instance
plans on a node an announcement gave up only once its own cache has followed the stream that far, so it
sees every bind the old owner made there (with `--backend kube` too, where binds reach the stream
through the relay).
When an announcement goes (its instance stopped, after waiting for its binds in flight; or it died and
the announcement was removed after ANNOUNCED_STALE_S, its lease long lapsed), the others follow the pods
stream to its end before planning on its nodes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

import structlog

from vc_core.ownership import balanced_owners
from vc_proto.pod_shards import SHARDS
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.ledger import View
from vc_scheduler.ledger_kv import QUEUE_PREFIX, Ledger
from vc_scheduler.lending import Lent, LoanBook
from vc_scheduler.metrics import SHARD_RECORDS
from vc_scheduler.shard_records import ShardTally
from vc_scheduler.share import Partition

log = structlog.get_logger(__name__)
ANNOUNCE_TIMEOUT_S: Final = 5.0
# How long an instance that loses nodes waits for its binds and loans there to land before it gives the
# nodes up (it commits nothing on its nodes meanwhile); past it, it tries again at its next cycle.
HANDOVER_WAIT_S: Final = 15.0
HANDOVER_POLL_S: Final = 0.05
# How long a cycle waits for the cache to follow the pods stream to an announcement's revision.
FOLLOW_WAIT_S: Final = 5.0
LEAVE_WAIT_S: Final = 3.0  # a stopping instance waits this long for its binds in flight before it retracts
# An announcement of an instance that is no longer a member is removed once this old: longer than any
# lease lasts unrenewed, so its owner is fenced by then, and than a joining instance's lease takes to be
# seen here.
ANNOUNCED_STALE_S: Final = 15.0


class PodsStream(Protocol):
    """The pods stream as the hand-over needs it, over the shards this instance's cache covers
    (shard_feed.FollowedPods)."""

    def cover(self, shards: frozenset[int]) -> None:
        """Follow the pods of `shards` (those of the member set this instance announced)."""
        ...

    def synced(self) -> bool:
        """Whether the cache holds every pod of the covered shards (not reading them from the start)."""
        ...

    def followed_revision(self) -> int:
        """How far this instance's cache has followed the stream."""
        ...

    async def last_revision(self) -> int:
        """The newest revision among the covered shards' pods now."""
        ...

    async def followed(self, revision: int, timeout_s: float) -> bool:
        """Whether the cache has followed the stream to `revision`, waiting up to `timeout_s`."""
        ...


class Peers(Protocol):
    async def partition(self, members: tuple[str, ...], view: View, index: ClusterIndex | None = None) -> Partition:
        """Who owns what for the next cycle (the same object while nothing changed); called between
        cycles only. `index`: the cache's, whose shard records are written as the new set will count them
        before a new set is announced."""
        ...

    def reserved(self, view: View) -> dict[str, Lent]:
        """By pod uid, other instances' binds in flight on this instance's nodes (the loans it granted),
        judged against `view`."""
        ...

    def commits_on(self, node: str) -> bool:
        """Whether this instance may commit on `node` without asking anyone: it owns it under the set it
        announced, and it is not handing nodes over."""
        ...

    def owner_of(self, node: str) -> str | None:
        """The other instance to ask for a loan on `node` (None: no single one claims it)."""
        ...

    @property
    def book(self) -> LoanBook:
        """The loans granted on this instance's nodes."""
        ...

    def changed(self) -> bool:
        """Whether another instance's announcement changed since `settle`."""
        ...

    def settle(self) -> None:
        """A cycle starts: it reads the others as they are now."""
        ...

    async def leave(self) -> None:
        """The instance stops: what it claimed goes to the others now."""
        ...

    async def publish(self, index: ClusterIndex, shards: frozenset[int]) -> None:
        """Write what the instance's `shards` add up to, as far as it moved since the last time, for the
        other instances (shard_records.py). Best effort: what is not written is written at the next call."""
        ...


class Alone:
    def __init__(self, instance: str) -> None:
        self._partition = Partition(instance, (instance,))
        self._book = LoanBook()

    async def partition(self, members: tuple[str, ...], view: View, index: ClusterIndex | None = None) -> Partition:
        return self._partition

    def reserved(self, view: View) -> dict[str, Lent]:
        return {}

    def commits_on(self, node: str) -> bool:
        return True

    def owner_of(self, node: str) -> str | None:
        return None

    @property
    def book(self) -> LoanBook:
        return self._book

    def changed(self) -> bool:
        return False

    def settle(self) -> None:
        return None

    async def leave(self) -> None:
        return None

    async def publish(self, index: ClusterIndex, shards: frozenset[int]) -> None:
        return None  # (nobody else to read it)


class Several:
    def __init__(
        self,
        ledger: Ledger,
        *,
        pods: PodsStream,
        in_flight: Callable[[], int] = lambda: 0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`in_flight`: how many of this instance's gangs are in flight, and binds written that its cache
        has not seen stored yet."""
        self.ledger = ledger
        self.instance = ledger.instance
        self._pods = pods
        self._in_flight = in_flight
        self._clock, self._sleep = clock, sleep
        self._book = LoanBook()
        self._announced: tuple[str, ...] = ()  # the member set last announced
        self._partition: Partition | None = None
        self._handing_over = False  # nodes are being given up: no commits on own nodes, no loans
        self._required = 0  # the pods stream revision to follow before planning on nodes given up
        self._departed: frozenset[str] = frozenset()  # gone announcers whose stream end is in _required
        self._covering: tuple[str, ...] = ()  # the member set whose shards the cache was told to cover

    @property
    def book(self) -> LoanBook:
        return self._book

    async def partition(self, members: tuple[str, ...], view: View, index: ClusterIndex | None = None) -> Partition:
        """PodGroups and nodes by the member set this instance announced it plans under, less the nodes
        other instances' announcements claim (share.Partition). A new member set is announced here,
        between cycles, before the first cycle that plans under it, once the nodes it gives up have
        nothing of this instance in flight (the module's docstring); should either fail, the cycle plans
        under the set announced before (nodes move only once announced). Every other announcement
        counts, also one of an instance this one has not seen join yet; one of an instance that left is
        removed once it is older than ANNOUNCED_STALE_S."""
        if members == self._announced and self._stands():
            self._handing_over = False  # a joiner it was handing nodes over to left again before it announced
        elif self._announced and not self._pods.synced():
            pass  # its cache reads shards from their start: their records would count part of them
        elif await self._handed_over(members, view):
            try:
                # Every bind of this instance is in its cache by now (_handed_over): the others follow
                # the stream as far as it has.
                revision = self._pods.followed_revision()
                async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                    if index is not None:
                        await self._hand_over_records(index, members, revision)
                    await self.ledger.announce(members, pods_revision=revision)
                self._announced = members
                self._handing_over = False
            except Exception as exc:  # NATS unavailable: plan under the last announced set; again next cycle
                log.warning("partition.announce_failed", members=list(members), error=repr(exc))
                if index is not None:  # (what it wrote for the new set is written again as it counts now)
                    for shard in self._partition.shards if self._partition is not None else ():
                        index.tally.rewrite(shard, index.others.stored(shard))
        await self._retract_stale(frozenset(members))
        others = {m: a for m, a in self.ledger.announced.items() if m != self.instance}
        claims = {m: a.members for m, a in others.items()}
        mine = self._announced or (self.instance,)
        if mine != self._covering:  # its cache follows the pods of the shards it announced, from now on
            self._pods.cover(Partition(self.instance, mine).shards)
            self._covering = mine
        held = self._partition
        if held is None or (held.members, held.claims) != (mine, claims):
            try:
                departed = frozenset(m for m in (held.claims if held is not None else ()) if m not in claims)
                if departed - self._departed:
                    # An instance's announcement is gone (it stopped, or left and was removed): its
                    # binds are all in the pods stream by now; see them before planning on its nodes
                    # (the stream's end is read once per departure, not chased while the cache follows).
                    self._required = max(self._required, await self._pods.last_revision())
                    self._departed = departed
                required = max([self._required, *(a.pods_revision for a in others.values())])
                followed = await self._pods.followed(required, FOLLOW_WAIT_S)
                if followed and held is not None and index is not None:
                    followed = not self._unwritten(departed, held, index)
            except Exception as exc:  # NATS unavailable: plan as before
                log.warning("partition.follow_failed", error=repr(exc))
                followed = False
            if not followed:
                if held is not None:
                    return held  # plan as before until the cache has seen the binds made on the nodes that move
                raise TimeoutError("the cache has not followed the pods stream to the announced revisions")
            held = self._partition = Partition(self.instance, mine, claims)
            self._departed = frozenset()
        return held

    async def _hand_over_records(self, index: ClusterIndex, members: tuple[str, ...], revision: int) -> None:
        """Write the records of every shard this instance owned under its last announced set as `members`
        will count them: each shard's pods on nodes its new owner will not own are its `away`. Written
        before the announcement, they are read by every instance before it: a node's new owner, which
        plans there once it has read the announcement, and the shard's new owner, which writes the shard
        only then (`_claimed`)."""
        owned = Partition(self.instance, self._announced).shards if self._announced else frozenset()
        if not owned:
            return
        owners = balanced_owners(SHARDS, members)
        tally = ShardTally()
        for member in {owners[shard] for shard in owned}:
            theirs = frozenset(shard for shard in owned if owners[shard] == member)
            index.count_shards(tally, theirs, Partition(member, members).owns_node)
        for shard in owned:
            tally.rewrite(shard, index.others.stored(shard))
        records = tally.flush(revision, owned, self.instance)
        failed = await self.ledger.write_records(records)
        SHARD_RECORDS.labels(self.instance, "written").inc(len(records) - len(failed))
        if failed:
            SHARD_RECORDS.labels(self.instance, "failed").inc(len(failed))
            raise ConnectionError(f"{len(failed)} of the hand-over's shard records unwritten")

    @staticmethod
    def _unwritten(departed: frozenset[str], held: Partition, index: ClusterIndex) -> bool:
        """Whether a shard a departed instance owned still has a record of its writing: that instance
        wrote no hand-over, its shards' pods on its own nodes are in no `away` record, and its nodes wait
        until the shards' new owners have written them."""
        for member in departed:
            theirs = Partition(member, held.claims[member]).shards
            if index.others.written_by(member, theirs):
                log.info("partition.waiting_for_records", departed=member)
                return True
        return False

    def _claimed(self) -> frozenset[int]:
        """The shards another instance's announcement gives that instance: it writes their records until
        it announces a set that does not (a shard this instance took is written by it only then)."""
        out: set[int] = set()
        for member, made in self.ledger.announced.items():
            if member != self.instance:
                out.update(s for s, owner in enumerate(balanced_owners(SHARDS, made.members)) if owner == member)
        return frozenset(out)

    def _stands(self) -> bool:
        """Whether this instance's last announcement is still in the ledger. Another instance removes it
        when this one seemed gone for ANNOUNCED_STALE_S (its lease lapsed, behind a slow link): without it
        nobody else knows these nodes are claimed, nobody lends them, and the others' borrowing sessions
        plan on them in vain, so it is announced again."""
        stored = self.ledger.announced.get(self.instance)
        return stored is not None and stored.members == self._announced

    async def _handed_over(self, members: tuple[str, ...], view: View) -> bool:
        """Whether this instance may announce `members`: at once if it gains nodes only (its first
        announcement, or members left); when a member joined, once nothing of its own is in flight."""
        if not self._announced or set(members) <= set(self._announced):
            return True
        self._handing_over = True
        deadline = self._clock() + HANDOVER_WAIT_S
        while self._in_flight() or self._book.outstanding(view, self._clock()):
            if self._clock() >= deadline:
                log.info("partition.handover_waiting", gangs=self._in_flight())
                return False
            await self._sleep(HANDOVER_POLL_S)  # binds land and loans lapse by clock, not by one event
        return True

    def reserved(self, view: View) -> dict[str, Lent]:
        return self._book.lent(view, self._clock())

    def commits_on(self, node: str) -> bool:
        held = self._partition
        return held is not None and not self._handing_over and held.owns_node(node)

    def owner_of(self, node: str) -> str | None:
        held = self._partition
        return held.owner_of_node(node) if held is not None else None

    def changed(self) -> bool:
        return self.ledger.changed.is_set()

    def settle(self) -> None:
        self.ledger.changed.clear()

    async def leave(self) -> None:
        if not self._announced:
            return
        # Best effort (NATS may be gone): the others remove it after ANNOUNCED_STALE_S anyway.
        self._handing_over = True  # no more commits on its nodes; those in flight land first
        deadline = self._clock() + LEAVE_WAIT_S
        while self._in_flight() and self._clock() < deadline:
            await self._sleep(HANDOVER_POLL_S)
        try:
            async with asyncio.timeout(1.0):
                await self.ledger.retract(self.instance)
        except Exception as exc:
            log.info("partition.retract_on_exit_failed", error=repr(exc))

    async def publish(self, index: ClusterIndex, shards: frozenset[int]) -> None:
        """Write the own shards' records that moved; once all are written, take back this instance's
        reservations in capped queues whose pods they count (stored bound): the others count those pods
        in the records from now on, and a reservation kept as well would count each twice for as long as
        it lives (ledger.SETTLED_AFTER_S)."""
        shards = shards - self._claimed()
        index.tally.again(index.others.stray(self.instance, shards))  # (a previous owner's, read late)
        counted = self._counted_reservations(index, shards)  # (before the flush: the records written count them)
        records = index.tally.flush(self._pods.followed_revision(), shards, self.instance)
        failed: list[str] = []
        if records:
            try:
                async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                    failed = await self.ledger.write_records(records)
            except Exception as exc:  # NATS unavailable (the bucket could not be opened, or no answer in time)
                log.warning("shard_records.unwritten", count=len(records), error=repr(exc))
                failed = [key for key, _ in records]
            index.tally.again(failed)
            SHARD_RECORDS.labels(self.instance, "written").inc(len(records) - len(failed))
            if failed:
                SHARD_RECORDS.labels(self.instance, "failed").inc(len(failed))
        if counted and not failed:
            await self._take_back(counted)

    def _counted_reservations(self, index: ClusterIndex, shards: frozenset[int]) -> dict[str, list[str]]:
        """By capped queue's key, this instance's reservations there whose pods the records of `shards`
        count."""
        out: dict[str, list[str]] = {}
        for key, record in self.ledger.records():
            if key.startswith(QUEUE_PREFIX):
                mine = record.reservations.items()
                uids = [u for u, r in mine if r.instance == self.instance and index.counts(u, shards)]
                if uids:
                    out[key] = uids
        return out

    async def _take_back(self, counted: dict[str, list[str]]) -> None:
        try:
            async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                await asyncio.gather(*(self.ledger.release(key, uids) for key, uids in counted.items()))
        except Exception as exc:  # they lapse by age meanwhile (ledger.keep); the next publish tries again
            log.info("ledger.take_back_failed", keys=len(counted), error=repr(exc))

    async def _retract_stale(self, live: frozenset[str]) -> None:
        """Remove the announcements of instances that left (their lease ended) and announced nothing for
        ANNOUNCED_STALE_S: their claims would keep their nodes from everyone. Younger ones stay: the
        instance may have just joined, its lease not yet seen here."""
        now = self._clock()
        for member, made in list(self.ledger.announced.items()):
            if member == self.instance or member in live or now - made.at < ANNOUNCED_STALE_S:
                continue
            try:
                async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                    await self.ledger.retract(member, made.revision)
                log.info("partition.retracted", member=member)
            except Exception as exc:  # the next cycle tries again
                log.warning("partition.retract_failed", member=member, error=repr(exc))

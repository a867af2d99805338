"""SHELL: the one writer of the scheduler's PodGroup statuses and queue `status.allocated` figures.

The loop offers every status a cycle reports; the policy (status_policy.py) picks those worth a write
for the keys this instance owns. Writes coalesce per key: while one waits in the in-flight queue a
newer status replaces it, so a backlog never holds more than one write per PodGroup or queue. A
PodGroup is written on the newest copy we have (the watch's, or our own last write while the watch
lags), so consecutive writes neither re-read nor conflict; a changed verdict (Scheduled,
Unschedulable) goes on the job's history. Writes stop at the membership fence (a FencedStore).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec

from vc_core.errors import Conflict, NotFound
from vc_core.ownership import Ownership
from vc_core.store import ObjectStore, VersionMemory
from vc_core.why_pending import readable
from vc_proto import events as ev
from vc_proto.scheduling import PodGroup, PodGroupStatus, Queue, QueueStatus
from vc_proto.vocabulary import PodGroupConditionType
from vc_runtime.sharding import FencedStore
from vc_sched_core.framework.decisions import PodGroupStatusUpdate, QueueStatusUpdate
from vc_sched_core.snapshot.cluster import PodGroupObj
from vc_scheduler.cache import SchedulerCache, resource_version_number, stored_object
from vc_scheduler.events import SchedulerEvents, timestamp
from vc_scheduler.inflight import InFlight
from vc_scheduler.metrics import PG_WRITES, QUEUE_WRITES
from vc_scheduler.status_policy import SentAllocations, SentStatuses, merely_starting, merge_status, same_status

S = TypeVar("S", PodGroupStatusUpdate, QueueStatusUpdate)
WRITE_ATTEMPTS = 5
# Entries of deleted PodGroups kept before pruning: 4x the live ones, at least this many (a prune costs
# one pass over the entries; a floor of 1,024 let a small cluster's writer hold thousands of gone
# PodGroups, each with its last update and stored object: the soak in docs/reliability.md caught it).
SENT_MIN = 64


class StatusWriter:
    def __init__(
        self,
        store: ObjectStore,
        cache: SchedulerCache,
        events: SchedulerEvents,
        *,
        ownership: Ownership,
        work: InFlight,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = FencedStore(store, ownership)
        # The cache reads the mirror's KV directly, so a kube store has not seen those versions: told of
        # the one a write starts from, it patches without a GET first (one apiserver request per gang).
        self._versions = store if isinstance(store, VersionMemory) else None
        self._cache = cache
        self._events = events
        self._own = ownership
        self._work = work
        self._clock = clock
        self._sent = SentStatuses()
        self._allocations = SentAllocations()
        # The newest status per key not yet written: one queued job stands for it until it is.
        self._podgroups: dict[str, PodGroupStatusUpdate] = {}
        self._queues: dict[str, QueueStatusUpdate] = {}
        self._written: dict[str, PodGroup] = {}  # PodGroups as our last status write left them
        # Per PodGroup the last update the policy judged, the stored object and the members then: an
        # equal update on the same stored object and members gets the same answer without asking.
        self._judged: dict[str, tuple[PodGroupStatusUpdate, PodGroupObj | None, tuple[str, ...]]] = {}

    @property
    def instance(self) -> str:
        return self._own.instance

    # -- what the loop offers ----------------------------------------------------------------------
    def offer_podgroup(self, update: PodGroupStatusUpdate) -> bool:
        """Queue a write of the PodGroup's status if this instance owns it and the policy says it is
        due; whether it was queued."""
        key = update.podgroup
        stored, members = self._cache.podgroups.get(key), self._own.members
        judged = self._judged.get(key)
        if (
            judged is not None
            and judged[1] is stored
            and judged[2] is members
            and not self._sent.holds(key)
            and same_status(judged[0], update)
        ):
            return False  # sent (or found stored) before, and nothing changed since: not due
        if not self._own.owns(key):
            return False
        self._judged[key] = (update, stored, members)
        if not self._sent.due(update, self._clock(), stored):
            return False
        live = self._cache.podgroups
        self._sent.forget_all_but(live, above=4 * max(SENT_MIN, len(live)))
        if len(self._judged) > 4 * max(SENT_MIN, len(live)):
            self._judged = {k: v for k, v in self._judged.items() if k in live}
        self._coalesce(self._podgroups, key, update, "PodGroupStatus", self.write_podgroup)
        return True

    def offer_queue(self, update: QueueStatusUpdate) -> bool:
        """Queue a write of a queue's `status.allocated`: by the instance owning the queue, when due."""
        if update.queue not in self._cache.queues or not self._own.owns(f"queue:{update.queue}"):
            return False
        if not self._allocations.due(update, self._clock()):
            return False
        self._coalesce(self._queues, update.queue, update, "QueueStatus", self.write_queue)
        return True

    def revisit(self) -> int:
        """Offer again, as last judged, the PodGroup statuses held back or unconfirmed whose time has
        come (a cycle reports only statuses that may have changed, so no one else offers these again);
        how many were queued."""
        now, queued = self._clock(), 0
        for key in self._sent.due_keys(now):
            judged = self._judged.get(key)
            if judged is not None and self.offer_podgroup(judged[0]):
                queued += 1
        return queued

    def next_due(self) -> float | None:
        """When a status this writer declined for now (counts held back, a queue figure rate-limited, a
        write not yet seen in the store) is due again, on the writer's clock; None when none is. The loop
        runs a cycle by then even if nothing changed, so the status is offered again."""
        podgroups = self._sent.next_due(lambda key: key in self._cache.podgroups and self._own.owns(key))
        queues = self._allocations.next_due(lambda q: q in self._cache.queues and self._own.owns(f"queue:{q}"))
        times = [t for t in (podgroups, queues) if t is not None]
        return min(times) if times else None

    def _coalesce(
        self, newest: dict[str, S], key: str, update: S, kind: str, write: Callable[[S], Awaitable[None]]
    ) -> None:
        waiting = key in newest
        newest[key] = update
        if waiting:
            return

        async def write_newest() -> None:
            latest = newest.pop(key, None)
            if latest is not None:
                await write(latest)

        self._work.submit(kind, write_newest)

    # -- the writes --------------------------------------------------------------------------------
    async def write_podgroup(self, update: PodGroupStatusUpdate) -> None:
        if not self._own.owns(update.podgroup):
            return  # another instance's PodGroup (ownership moved since the offer): its owner writes it
        namespace, name = update.podgroup.split("/", 1)
        stored = self._cache.stored_podgroup(update.podgroup)
        for attempt in range(WRITE_ATTEMPTS):
            pg = self._newest_podgroup(update.podgroup, stored) if attempt == 0 else None
            if pg is None:  # no copy in the cache, or ours lost a compare-and-set: read the store
                try:
                    pg = await self._store.get(PodGroup, namespace, name)
                except NotFound:
                    return
            elif self._versions is not None:
                self._versions.remember(pg)
            old = pg.status or PodGroupStatus()
            status = merge_status(old, update, timestamp())
            if status == old:
                return
            try:
                written = await self._store.update(msgspec.structs.replace(pg, status=status))
            except Conflict:
                continue
            self._written[update.podgroup] = written
            self._cache.expect_echo(update.podgroup, resource_version_number(written))
            if len(self._written) > SENT_MIN + 2 * len(self._cache.podgroups):  # deleted PodGroups' leftovers
                self._written = {k: v for k, v in self._written.items() if k in self._cache.podgroups}
            PG_WRITES.labels(self.instance, "ok").inc()
            await self._verdict(pg, old, status)
            return
        PG_WRITES.labels(self.instance, "conflict").inc()

    async def write_queue(self, update: QueueStatusUpdate) -> None:
        """Write a queue's `status.allocated` (the queue-controller writes the rest of the status and
        leaves this field alone; one scheduler instance owns each queue's figure)."""
        allocated = update.allocated or None
        for _ in range(WRITE_ATTEMPTS):
            try:
                queue = await self._store.get(Queue, None, update.queue)
            except NotFound:
                return
            old = queue.status or QueueStatus()
            if old.allocated == allocated:
                return
            try:
                status = msgspec.structs.replace(old, allocated=allocated)
                await self._store.update(msgspec.structs.replace(queue, status=status))
            except Conflict:
                continue  # the queue-controller wrote its fields meanwhile
            QUEUE_WRITES.labels(self.instance, "ok").inc()
            return
        QUEUE_WRITES.labels(self.instance, "conflict").inc()

    def _newest_podgroup(self, key: str, stored: tuple[bytes, int] | None) -> PodGroup | None:
        """The newer of what the watch last delivered and what we last wrote: right after our own
        write the watch still holds the revision before it, and writing on that would only conflict."""
        written = self._written.get(key)
        cached = stored_object(PodGroup, stored) if stored is not None else None
        if written is not None and (
            cached is None or resource_version_number(written) > resource_version_number(cached)
        ):
            return written
        self._written.pop(key, None)  # the watch caught up with our write
        return cached

    async def _verdict(self, pg: PodGroup, old: PodGroupStatus, new: PodGroupStatus) -> None:
        """Publish 'why is my job pending' on the job's history when the verdict changes."""
        before = {c.type: (c.status, c.message) for c in old.conditions or []}
        for cond in new.conditions or []:
            if cond.status != "True" or before.get(cond.type or "") == (cond.status, cond.message):
                continue
            if merely_starting(cond.type, cond.reason, new.phase):
                continue
            reason = ev.UNSCHEDULABLE if cond.type == PodGroupConditionType.UNSCHEDULABLE else ev.SCHEDULED
            job = self._cache.owner_job.get(f"{pg.metadata.namespace}/{pg.metadata.name}")
            await self._events.publish(
                kind="PodGroup",
                namespace=pg.metadata.namespace,
                name=pg.metadata.name or "",
                reason=reason,
                message=readable(cond.message or "") or cond.reason,
                job=job,
                phase=new.phase,
                previous_phase=old.phase,
                uid=pg.metadata.uid,
            )

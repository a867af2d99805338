"""SHELL: carry out a cycle's decisions through the store without blocking the next cycle.

Binds come as gangs (one PodGroup's binds of one cycle). A gang is first reserved in the placement
ledger (ledger_kv.py): on its queue and each ancestor that has a capability, then on each of its
nodes, all or nothing (a refused
node rolls back the reservations already made). Only then are its pods bound, each a compare-and-set
on the pod (only an unbound, undeleted pod of the same uid is bound, the fence the binding
subresource gives in Kubernetes). Evictions delete gracefully; PodGroup statuses are written only
for owned PodGroups and only when they changed. Every write first checks the membership fence, so an
instance whose lease lapsed (paused, partitioned) writes nothing.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import TypeVar

import msgspec
import structlog

from vc_bus.objects import with_meta
from vc_core.errors import Conflict, Fenced, NotFound, VcError
from vc_core.resources import Resources
from vc_core.store import ObjectStore
from vc_proto import codec
from vc_proto import events as ev
from vc_proto.core import Pod
from vc_proto.events import DomainEvent
from vc_proto.scheduling import PodGroup, PodGroupCondition, PodGroupStatus, Queue, QueueStatus
from vc_scheduler import ledger
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.ledger import View
from vc_scheduler.ledger_kv import Ledger, node_key, queue_key
from vc_scheduler.metrics import BINDS, ERRORS, EVICTS, FENCED, GANGS, PG_WRITES, QUEUE_WRITES, TASK_LATENCY
from vc_scheduler.sharding import Ownership, SoleOwner
from vc_scheduling.framework.decisions import Bind, Evict, PodGroupStatusUpdate, QueueStatusUpdate

log = structlog.get_logger(__name__)
T = TypeVar("T", Pod, PodGroup)
S = TypeVar("S", PodGroupStatusUpdate, QueueStatusUpdate)
# Work items in flight. A gang is ~3 requests per pod (reserve, bind, event): 64 gangs of 10 keep
# ~2,000 requests outstanding; more only piles JetStream timeouts up at 100k pods on 2 cores.
MAX_IN_FLIGHT = 64
BOUND_BY = "scheduling.tephra.dev/bound-by"  # "<instance>/<epoch>": which scheduler life bound the pod


@dataclass(frozen=True, slots=True)
class Gang:
    """One PodGroup's binds from one cycle, committed all or nothing in the ledger."""

    podgroup: str | None  # None: pods of no PodGroup, each on its own
    binds: tuple[Bind, ...]
    requests: Mapping[str, Resources]  # by pod uid (without `pods`)
    capacities: Mapping[str, Mapping[str, Fraction]]  # by node
    view: View
    # The gang's queue and its ancestors that have a capability (nearest first), with it: the gang is
    # reserved on each, so no capability in the hierarchy is exceeded across instances.
    capped_queues: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()


Work = Gang | Evict | PodGroupStatusUpdate | QueueStatusUpdate


@dataclass(frozen=True, slots=True)
class _StatusDue:
    """A PodGroup whose newest status (held in Dispatcher._statuses) waits to be written."""

    podgroup: str


@dataclass(frozen=True, slots=True)
class _AllocatedDue:
    """A queue whose newest `status.allocated` (held in Dispatcher._allocated) waits to be written."""

    queue: str


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Dispatcher:
    def __init__(
        self,
        store: ObjectStore,
        cache: SchedulerCache,
        publish: object,
        *,
        source: str,
        ownership: Ownership | None = None,
        ledger_kv: Ledger | None = None,
    ) -> None:
        self._store = store
        self._cache = cache
        self._publish = publish
        self._source = source
        self._own = ownership or SoleOwner()
        self._ledger = ledger_kv
        self._gate = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._queue: asyncio.Queue[Gang | Evict | _StatusDue | _AllocatedDue] = asyncio.Queue()
        # Status writes coalesce per PodGroup: while one waits, a newer status replaces it, so a
        # backlog never holds more than one write per PodGroup (every cycle reports every status).
        self._statuses: dict[str, PodGroupStatusUpdate] = {}
        self._written: dict[str, PodGroup] = {}  # PodGroups as our last status write left them
        self._allocated: dict[str, QueueStatusUpdate] = {}  # coalesced the same way, per queue
        self.in_flight = 0

    @property
    def instance(self) -> str:
        return self._own.instance

    def submit(self, work: Work) -> None:
        if isinstance(work, PodGroupStatusUpdate):
            self._coalesce(self._statuses, work.podgroup, work, _StatusDue(work.podgroup))
        elif isinstance(work, QueueStatusUpdate):
            self._coalesce(self._allocated, work.queue, work, _AllocatedDue(work.queue))
        else:
            self._queue.put_nowait(work)

    def _coalesce(self, newest: dict[str, S], key: str, update: S, due: _StatusDue | _AllocatedDue) -> None:
        """Keep only the newest status per key: one queued entry stands for it until it is written."""
        waiting = key in newest
        newest[key] = update
        if not waiting:
            self._queue.put_nowait(due)

    @property
    def backlog(self) -> int:
        return self._queue.qsize() + self.in_flight

    async def run(self, shutdown: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as tg:
            while not (shutdown.is_set() and self._queue.empty()):
                try:
                    async with asyncio.timeout(0.5):
                        work = await self._queue.get()
                except TimeoutError:
                    continue
                await self._gate.acquire()
                self.in_flight += 1
                tg.create_task(self._carry_out(work), name=f"decision:{type(work).__name__}")

    async def _carry_out(self, work: Gang | Evict | _StatusDue | _AllocatedDue) -> None:
        try:
            if isinstance(work, Gang):
                await self._gang(work)
            elif isinstance(work, Evict):
                await self._evict(work)
            elif isinstance(work, _AllocatedDue):
                allocated = self._allocated.pop(work.queue, None)
                if allocated is not None:
                    await self._queue_allocated(allocated)
            else:
                update = self._statuses.pop(work.podgroup, None)
                if update is not None:
                    await self._podgroup_status(update)
        except Fenced as exc:
            FENCED.labels(self.instance).inc()
            log.info("decision.fenced", decision=type(work).__name__, error=str(exc))
            if isinstance(work, Gang):
                self._forget(work.binds)
        except VcError as exc:
            log.info("decision.failed", decision=type(work).__name__, error=str(exc))
            if isinstance(work, Gang):
                self._forget(work.binds)
        except Exception as exc:  # transport boundary (a NATS timeout under load): the next cycle retries
            ERRORS.labels(self.instance).inc()
            log.warning("decision.error", decision=type(work).__name__, error=repr(exc))
            if isinstance(work, Gang):
                self._forget(work.binds)
        finally:
            self.in_flight -= 1
            self._gate.release()

    def _fence(self, what: str) -> None:
        if not self._own.can_write():
            raise Fenced(what)

    def _forget(self, binds: tuple[Bind, ...]) -> None:
        for bind in binds:
            self._cache.forget_assumed(bind.pod)

    # -- gangs -------------------------------------------------------------------------------------
    async def _gang(self, gang: Gang) -> None:
        if gang.podgroup is not None and not self._own.owns(gang.podgroup):
            # Ownership moved since the cycle planned it: the new owner places it.
            GANGS.labels(self.instance, "moved").inc()
            self._forget(gang.binds)
            return
        held: list[tuple[str, list[str]]] = []
        try:
            reserved = self._ledger is None or await self._reserve(gang, held)
        except Exception:
            await self._release(held)  # all or nothing, also when a write failed half-way
            raise
        if not reserved:
            GANGS.labels(self.instance, "conflict").inc()
            await self._release(held)
            self._forget(gang.binds)
            return
        outcomes = await asyncio.gather(*(self._bind(b) for b in gang.binds), return_exceptions=True)
        failed = {b.uid for b, ok in zip(gang.binds, outcomes, strict=True) if ok is not True}
        if failed:
            self._forget(tuple(b for b in gang.binds if b.uid in failed))
            await self._release([(key, [u for u in uids if u in failed]) for key, uids in held])
        for outcome in outcomes:
            if isinstance(outcome, Fenced):
                raise outcome
        GANGS.labels(self.instance, "ok" if not failed else "partial").inc()

    async def _reserve(self, gang: Gang, held: list[tuple[str, list[str]]]) -> bool:
        """All of the gang's reservations, its capped queues first, then every node at once; False if any
        refused (what was taken is in `held`, for the caller to roll back)."""
        assert self._ledger is not None
        stamp = time.time()
        for queue, capability in gang.capped_queues:  # in order: a refusal stops the rest
            taken = await self._take(
                gang, queue_key(queue), gang.binds, capability, gang.view.occupying_queue(queue), None, stamp, held
            )
            if not taken:
                return False
        by_node: dict[str, list[Bind]] = defaultdict(list)
        for b in gang.binds:
            by_node[b.node].append(b)

        async def one(node: str) -> bool:
            binds, capacity = tuple(by_node[node]), gang.capacities.get(node, {})
            return await self._take(
                gang, node_key(node), binds, capacity, gang.view.occupying_node(node), node, stamp, held
            )

        # The nodes are independent keys: reserve on all at once (one round trip, not one per node);
        # the caller rolls back whatever was taken if any node refused.
        nodes = sorted(by_node)
        results = await asyncio.gather(*(one(node) for node in nodes), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return all(results)

    async def _take(
        self,
        gang: Gang,
        key: str,
        binds: tuple[Bind, ...],
        capacity: Mapping[str, Fraction],
        occupying: Mapping[str, Resources],
        node: str | None,
        stamp: float,
        held: list[tuple[str, list[str]]],
    ) -> bool:
        """Reserve `binds` on one ledger key (a node's, or a queue's when `node` is None); what was
        taken goes into `held` for the caller's all-or-nothing rollback."""
        assert self._ledger is not None
        self._fence(f"ledger {key}")
        new = {
            b.uid: ledger.reservation(
                b.pod, gang.requests.get(b.uid, {}), instance=self.instance, epoch=self._own.epoch, at=stamp
            )
            for b in binds
        }
        outcome = await self._ledger.reserve(key, new, capacity, occupying, gang.view, node=node)
        if outcome.record is None:
            log.info("gang.refused", podgroup=gang.podgroup, key=key, over=outcome.over)
            return False
        held.append((key, [b.uid for b in binds]))
        return True

    async def _release(self, held: list[tuple[str, list[str]]]) -> None:
        assert self._ledger is not None or not held
        for key, uids in held:
            if uids and self._ledger is not None and self._own.can_write():
                try:
                    await self._ledger.release(key, uids)
                except Exception as exc:  # left for pruning: it reclaims unbound reservations
                    log.info("ledger.release_failed", key=key, error=str(exc))

    async def _bind(self, bind: Bind) -> bool:
        namespace, name = bind.pod.split("/", 1)
        stored = self._cache.stored_unbound(bind.pod)
        for attempt in range(5):
            pod = _decoded(Pod, stored) if attempt == 0 and stored is not None else None
            if pod is None:
                try:
                    pod = await self._store.get(Pod, namespace, name)
                except NotFound:
                    BINDS.labels(self.instance, "gone").inc()
                    return False
            if pod.metadata.uid != bind.uid or pod.metadata.deletion_timestamp or (pod.spec and pod.spec.node_name):
                if attempt == 0 and stored is not None:
                    continue  # judge by the stored pod, not by our copy
                BINDS.labels(self.instance, "stale").inc()
                # Bound already (by a previous owner) is not a failure of the gang if it is our node.
                return bool(pod.spec and pod.spec.node_name == bind.node and pod.metadata.uid == bind.uid)
            spec = msgspec.structs.replace(pod.spec, node_name=bind.node) if pod.spec else None
            annotations = {**(pod.metadata.annotations or {}), BOUND_BY: f"{self.instance}/{self._own.epoch}"}
            meta = msgspec.structs.replace(pod.metadata, annotations=annotations)
            self._fence(f"bind {bind.pod}")
            try:
                await self._store.update(msgspec.structs.replace(pod, spec=spec, metadata=meta))
            except Conflict:
                continue  # e.g. a label write in between (or our copy was stale): re-read and retry
            except NotFound:
                BINDS.labels(self.instance, "gone").inc()
                return False
            BINDS.labels(self.instance, "ok").inc()
            assumed = self._cache.bound(bind.pod)
            if assumed is not None:
                TASK_LATENCY.labels("Bound").observe((time.monotonic() - assumed) * 1000)
            await self._event(pod, ev.POD_BOUND, f"Successfully assigned {bind.pod} to {bind.node}", node=bind.node)
            return True
        BINDS.labels(self.instance, "conflict").inc()
        return False

    async def _evict(self, evict: Evict) -> None:
        namespace, name = evict.pod.split("/", 1)
        try:
            pod = await self._store.get(Pod, namespace, name)
            self._fence(f"evict {evict.pod}")
            await self._store.delete(Pod, namespace, name, uid=evict.uid)
        except (NotFound, Conflict):
            EVICTS.labels(self.instance, "stale").inc()
            return
        EVICTS.labels(self.instance, "ok").inc()
        await self._event(
            pod,
            ev.POD_EVICTED,
            f"Pod is evicted, because of {evict.reason}",
            node=pod.spec.node_name if pod.spec else None,
        )

    async def _podgroup_status(self, update: PodGroupStatusUpdate) -> None:
        if not self._own.owns(update.podgroup):
            return  # another instance's PodGroup: its owner writes its status
        namespace, name = update.podgroup.split("/", 1)
        stored = self._cache.stored_podgroup(update.podgroup)
        for attempt in range(5):
            pg = self._newest_podgroup(update.podgroup, stored) if attempt == 0 else None
            if pg is None:  # no copy in the cache, or ours lost a compare-and-set: read the store
                try:
                    pg = await self._store.get(PodGroup, namespace, name)
                except NotFound:
                    return
            old = pg.status or PodGroupStatus()
            status = _merge_status(old, update)
            if status == old:
                return
            self._fence(f"podgroup status {update.podgroup}")
            try:
                written = await self._store.update(msgspec.structs.replace(pg, status=status))
            except Conflict:
                continue
            self._written[update.podgroup] = written
            if len(self._written) > 1024 + 2 * len(self._cache.podgroups):  # deleted PodGroups' leftovers
                self._written = {k: v for k, v in self._written.items() if k in self._cache.podgroups}
            PG_WRITES.labels(self.instance, "ok").inc()
            await self._verdict(pg, old, status)
            return
        PG_WRITES.labels(self.instance, "conflict").inc()

    async def _queue_allocated(self, update: QueueStatusUpdate) -> None:
        """Write a queue's `status.allocated` (the queue-controller writes the rest of the status and
        leaves this field alone; one scheduler instance owns each queue's figure)."""
        allocated = update.allocated or None
        for _ in range(5):
            try:
                queue = await self._store.get(Queue, None, update.queue)
            except NotFound:
                return
            old = queue.status or QueueStatus()
            if old.allocated == allocated:
                return
            self._fence(f"queue status {update.queue}")
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
        if written is not None and (stored is None or int(written.metadata.resource_version or 0) > stored[1]):
            return written
        self._written.pop(key, None)  # the watch caught up with our write
        return _decoded(PodGroup, stored) if stored is not None else None

    async def _verdict(self, pg: PodGroup, old: PodGroupStatus, new: PodGroupStatus) -> None:
        """Publish 'why is my job pending' on the job's history when the verdict changes."""
        before = {c.type: (c.status, c.message) for c in old.conditions or []}
        for cond in new.conditions or []:
            if cond.status != "True" or before.get(cond.type or "") == (cond.status, cond.message):
                continue
            reason = ev.UNSCHEDULABLE if cond.type == "Unschedulable" else ev.SCHEDULED
            job = self._cache.owner_job.get(f"{pg.metadata.namespace}/{pg.metadata.name}")
            await self._publish_event(
                kind="PodGroup",
                namespace=pg.metadata.namespace,
                name=pg.metadata.name or "",
                reason=reason,
                message=cond.message or cond.reason,
                job=job,
                phase=new.phase,
                previous_phase=old.phase,
                uid=pg.metadata.uid,
            )

    async def _event(self, pod: Pod, reason: str, message: str, *, node: str | None) -> None:
        labels = pod.metadata.labels or {}
        await self._publish_event(
            kind="Pod",
            namespace=pod.metadata.namespace,
            name=pod.metadata.name or "",
            reason=reason,
            message=message,
            job=labels.get("volcano.sh/job-name"),
            task=labels.get("volcano.sh/task-spec"),
            uid=pod.metadata.uid,
            node=node,
        )

    async def _publish_event(self, **fields: object) -> None:
        identity = "/".join(str(fields.get(k)) for k in ("uid", "reason", "message", "phase", "node"))
        event = DomainEvent(
            id=uuid.uuid5(uuid.NAMESPACE_URL, identity).hex, occurred_at=_now(), source=self._source, **fields
        )  # type: ignore[arg-type]
        try:
            await self._publish(event)  # type: ignore[operator]
        except Exception as exc:  # history is best effort here; the state itself is in the store
            log.info("event.publish_failed", error=repr(exc), at=time.time())


def _decoded(kind: type[T], stored: tuple[bytes, int]) -> T | None:
    """The cache's stored bytes of an object as the object at that revision (None: not that kind)."""
    obj = codec.decode_object(stored[0])
    return with_meta(obj, resource_version=str(stored[1])) if isinstance(obj, kind) else None


def _merge_status(old: PodGroupStatus, update: PodGroupStatusUpdate) -> PodGroupStatus:
    """Volcano keeps a condition's transition time unless its status, reason or message changed."""
    now = _now()
    previous = {c.type: c for c in old.conditions or []}
    conditions = []
    for cond in update.conditions:
        before = previous.get(cond.type)
        same = before is not None and (before.status, before.reason or "", before.message or "") == (
            cond.status,
            cond.reason,
            cond.message,
        )
        conditions.append(
            PodGroupCondition(
                type=cond.type,
                status=cond.status,
                reason=cond.reason or None,
                message=cond.message or None,
                transition_id=before.transition_id if same and before else cond.transition_id or None,
                last_transition_time=(before.last_transition_time if same and before else now),
            )
        )
    for kind, cond in previous.items():
        if kind not in {c.type for c in update.conditions}:
            conditions.append(cond)
    return PodGroupStatus(
        phase=update.phase,
        conditions=conditions or None,
        running=update.running or None,
        succeeded=update.succeeded or None,
        failed=update.failed or None,
    )

"""SHELL: carry out a cycle's decisions through the store without blocking the next cycle.

Binds are compare-and-set on the pod (only an unbound, undeleted pod of the same uid is bound, the
fence the binding subresource gives in Kubernetes); evictions delete gracefully; PodGroup statuses
are written only when they changed. Each decision is one task under a bounded semaphore.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import msgspec
import structlog
from prometheus_client import Counter

from vc_core.errors import Conflict, NotFound, VcError
from vc_core.store import ObjectStore
from vc_proto import events as ev
from vc_proto.core import Pod
from vc_proto.events import DomainEvent
from vc_proto.scheduling import PodGroup, PodGroupCondition, PodGroupStatus
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.framework.decisions import Bind, Evict, PodGroupStatusUpdate

log = structlog.get_logger(__name__)
BINDS = Counter("tephra_scheduler_binds_total", "Binds written", ["outcome"])
EVICTS = Counter("tephra_scheduler_evictions_total", "Evictions written", ["outcome"])
PG_WRITES = Counter("tephra_scheduler_podgroup_status_writes_total", "PodGroup status writes", ["outcome"])
MAX_IN_FLIGHT = 256


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Dispatcher:
    def __init__(self, store: ObjectStore, cache: SchedulerCache, publish: object, *, source: str) -> None:
        self._store = store
        self._cache = cache
        self._publish = publish
        self._source = source
        self._gate = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._queue: asyncio.Queue[Bind | Evict | PodGroupStatusUpdate] = asyncio.Queue()

    def submit(self, decision: Bind | Evict | PodGroupStatusUpdate) -> None:
        self._queue.put_nowait(decision)

    @property
    def backlog(self) -> int:
        return self._queue.qsize()

    async def run(self, shutdown: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as tg:
            while not (shutdown.is_set() and self._queue.empty()):
                try:
                    async with asyncio.timeout(0.5):
                        decision = await self._queue.get()
                except TimeoutError:
                    continue
                await self._gate.acquire()
                tg.create_task(self._carry_out(decision), name=f"decision:{type(decision).__name__}")

    async def _carry_out(self, decision: Bind | Evict | PodGroupStatusUpdate) -> None:
        try:
            if isinstance(decision, Bind):
                await self._bind(decision)
            elif isinstance(decision, Evict):
                await self._evict(decision)
            else:
                await self._podgroup_status(decision)
        except VcError as exc:
            log.info("decision.failed", decision=type(decision).__name__, error=str(exc))
        finally:
            self._gate.release()

    async def _bind(self, bind: Bind) -> None:
        namespace, name = bind.pod.split("/", 1)
        for _ in range(5):
            try:
                pod = await self._store.get(Pod, namespace, name)
            except NotFound:
                BINDS.labels("gone").inc()
                return
            if pod.metadata.uid != bind.uid or pod.metadata.deletion_timestamp or (pod.spec and pod.spec.node_name):
                BINDS.labels("stale").inc()
                self._cache.forget_assumed(bind.pod)
                return
            spec = msgspec.structs.replace(pod.spec, node_name=bind.node) if pod.spec else None
            try:
                await self._store.update(msgspec.structs.replace(pod, spec=spec))
            except Conflict:
                continue  # e.g. a label write in between: re-read and retry
            BINDS.labels("ok").inc()
            await self._event(pod, ev.POD_BOUND, f"Successfully assigned {bind.pod} to {bind.node}", node=bind.node)
            return
        self._cache.forget_assumed(bind.pod)
        BINDS.labels("conflict").inc()

    async def _evict(self, evict: Evict) -> None:
        namespace, name = evict.pod.split("/", 1)
        try:
            pod = await self._store.get(Pod, namespace, name)
            await self._store.delete(Pod, namespace, name, uid=evict.uid)
        except (NotFound, Conflict):
            EVICTS.labels("stale").inc()
            return
        EVICTS.labels("ok").inc()
        await self._event(pod, ev.POD_EVICTED, f"Pod is evicted, because of {evict.reason}", node=pod.spec.node_name if pod.spec else None)

    async def _podgroup_status(self, update: PodGroupStatusUpdate) -> None:
        namespace, name = update.podgroup.split("/", 1)
        for _ in range(5):
            try:
                pg = await self._store.get(PodGroup, namespace, name)
            except NotFound:
                return
            old = pg.status or PodGroupStatus()
            status = _merge_status(old, update)
            if status == old:
                return
            try:
                await self._store.update(msgspec.structs.replace(pg, status=status))
            except Conflict:
                continue
            PG_WRITES.labels("ok").inc()
            await self._verdict(pg, old, status)
            return
        PG_WRITES.labels("conflict").inc()

    async def _verdict(self, pg: PodGroup, old: PodGroupStatus, new: PodGroupStatus) -> None:
        """Publish 'why is my job pending' on the job's history when the verdict changes."""
        before = {c.type: (c.status, c.message) for c in old.conditions or []}
        for cond in new.conditions or []:
            if cond.status != "True" or before.get(cond.type or "") == (cond.status, cond.message):
                continue
            reason = ev.UNSCHEDULABLE if cond.type == "Unschedulable" else ev.SCHEDULED
            job = self._cache.owner_job.get(f"{pg.metadata.namespace}/{pg.metadata.name}")
            await self._publish_event(kind="PodGroup", namespace=pg.metadata.namespace, name=pg.metadata.name or "",
                                      reason=reason, message=cond.message or cond.reason, job=job, phase=new.phase,
                                      previous_phase=old.phase, uid=pg.metadata.uid)

    async def _event(self, pod: Pod, reason: str, message: str, *, node: str | None) -> None:
        labels = pod.metadata.labels or {}
        await self._publish_event(kind="Pod", namespace=pod.metadata.namespace, name=pod.metadata.name or "", reason=reason,
                                  message=message, job=labels.get("volcano.sh/job-name"), task=labels.get("volcano.sh/task-spec"),
                                  uid=pod.metadata.uid, node=node)

    async def _publish_event(self, **fields: object) -> None:
        identity = "/".join(str(fields.get(k)) for k in ("uid", "reason", "message", "phase", "node"))
        event = DomainEvent(id=uuid.uuid5(uuid.NAMESPACE_URL, identity).hex, occurred_at=_now(), source=self._source, **fields)  # type: ignore[arg-type]
        try:
            await self._publish(event)  # type: ignore[operator]
        except Exception as exc:  # history is best effort here; the state itself is in the store
            log.info("event.publish_failed", error=repr(exc), at=time.time())


def _merge_status(old: PodGroupStatus, update: PodGroupStatusUpdate) -> PodGroupStatus:
    """Volcano keeps a condition's transition time unless its status, reason or message changed."""
    now = _now()
    previous = {c.type: c for c in old.conditions or []}
    conditions = []
    for cond in update.conditions:
        before = previous.get(cond.type)
        same = before is not None and (before.status, before.reason or "", before.message or "") == (cond.status, cond.reason, cond.message)
        conditions.append(PodGroupCondition(
            type=cond.type, status=cond.status, reason=cond.reason or None, message=cond.message or None,
            transition_id=before.transition_id if same and before else cond.transition_id or None,
            last_transition_time=(before.last_transition_time if same and before else now),
        ))
    for kind, cond in previous.items():
        if kind not in {c.type for c in update.conditions}:
            conditions.append(cond)
    return PodGroupStatus(phase=update.phase, conditions=conditions or None, running=update.running or None,
                          succeeded=update.succeeded or None, failed=update.failed or None)

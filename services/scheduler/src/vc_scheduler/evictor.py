"""SHELL: carry out a cycle's evictions (preempt, reclaim, shuffle): a graceful delete of the pod with
its uid as precondition, so a re-created pod of the same name is never hit. A pod already gone, or
changed under us, is left alone (the next cycle decides again). Writes stop at the membership fence."""

from __future__ import annotations

from vc_core.errors import Conflict, NotFound
from vc_core.ownership import Ownership
from vc_core.store import ObjectStore
from vc_proto import events as ev
from vc_proto.core import Pod
from vc_runtime.sharding import FencedStore
from vc_sched_core.framework.decisions import Evict
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.inflight import InFlight
from vc_scheduler.metrics import EVICTS


class Evictor:
    def __init__(self, store: ObjectStore, events: SchedulerEvents, *, ownership: Ownership, work: InFlight) -> None:
        self._store = FencedStore(store, ownership)
        self._events = events
        self._own = ownership
        self._work = work

    def submit(self, evict: Evict) -> None:
        self._work.submit("Evict", lambda: self.evict(evict))

    async def evict(self, evict: Evict) -> None:
        namespace, name = evict.pod.split("/", 1)
        try:
            pod = await self._store.get(Pod, namespace, name)
            await self._store.delete(Pod, namespace, name, uid=evict.uid)
        except (NotFound, Conflict):
            EVICTS.labels(self._own.instance, "stale").inc()
            return
        EVICTS.labels(self._own.instance, "ok").inc()
        await self._events.pod(
            pod,
            ev.POD_EVICTED,
            f"Pod is evicted, because of {evict.reason}",
            node=pod.spec.node_name if pod.spec else None,
        )

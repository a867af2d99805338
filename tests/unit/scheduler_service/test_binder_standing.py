"""The binder and this instance's own standing: a gang planned before the instance's lease renewal came
late is committed once the instance has re-joined and owns its PodGroup again, not dropped (on an
overloaded machine one late renewal dropped a whole backlog of planned gangs); a PodGroup another member
took while this instance's standing held is dropped at once."""

from __future__ import annotations

import asyncio

from vc_bus.testing import MemoryStore
from vc_proto.core import Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_sched_core.framework.decisions import Bind
from vc_scheduler.binder import GangBinder
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger import View

PODGROUP = "ns/pg"


class Standing:
    """An Ownership whose answers the test sets."""

    def __init__(self) -> None:
        self.instance = "s0"
        self.epoch = 1
        self.members: tuple[str, ...] = ("s0",)
        self.writable = True
        self.owned = True

    def owns(self, key: str) -> bool:
        return self.writable and self.owned

    def can_write(self) -> bool:
        return self.writable

    async def wait_changed(self) -> None:
        await asyncio.Event().wait()


async def _binder_with_a_pod(standing: Standing) -> tuple[GangBinder, MemoryStore, Gang]:
    store = MemoryStore()
    meta = ObjectMeta(name="p0", namespace="ns", annotations={"scheduling.k8s.io/group-name": "pg"})
    created = await store.create(Pod(api_version="v1", metadata=meta, spec=PodSpec(scheduler_name="volcano")))
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    binder = GangBinder(store, SchedulerCache(), events, ownership=standing, work=InFlight("s0"))
    bind = Bind(pod="ns/p0", uid=created.metadata.uid or "", node="n1")
    gang = Gang(podgroup=PODGROUP, binds=(bind,), requests={}, capacities={}, view=View())
    return binder, store, gang


async def _node_of(store: MemoryStore) -> str | None:
    pod = await store.get(Pod, "ns", "p0")
    return pod.spec.node_name if pod.spec else None


def test_a_gang_planned_before_a_late_renewal_is_bound_once_the_instance_owns_it_again() -> None:
    async def scenario() -> None:
        standing = Standing()
        binder, store, gang = await _binder_with_a_pod(standing)
        standing.writable = False  # the lease lapsed after the cycle planned the gang

        async def rejoin() -> None:
            await asyncio.sleep(0.2)
            standing.epoch, standing.writable = 2, True  # re-joined under a new epoch, settled

        await asyncio.gather(binder.commit(gang, planned_epoch=1), rejoin())
        assert await _node_of(store) == "n1"

    asyncio.run(scenario())


def test_a_podgroup_another_member_took_is_dropped_without_waiting() -> None:
    async def scenario() -> None:
        standing = Standing()
        binder, store, gang = await _binder_with_a_pod(standing)
        standing.owned = False  # a member joined and took it; this instance's own standing held
        await asyncio.wait_for(binder.commit(gang, planned_epoch=1), timeout=1.0)
        assert not await _node_of(store)

    asyncio.run(scenario())

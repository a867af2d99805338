"""The plan executor tells its caller what it created, so the caches hold it before the watch does."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from tests.unit.job_controller.jc_builders import job, task
from vc_bus.testing import MemoryStore
from vc_core.errors import Fenced, InvalidObject
from vc_core.kube_events import intents_for
from vc_job_controller.controller import JobController
from vc_job_controller.executor import PlanExecutor
from vc_job_controller.logic.plan import Plan
from vc_job_controller.logic.podgroup import build_podgroup
from vc_job_controller.logic.pods import build_job_pod
from vc_proto.core import Pod
from vc_proto.events import DomainEvent
from vc_proto.scheduling import PodGroup
from vc_runtime.sharding import SoleOwner


async def _no_history(events: object) -> int:
    return 0


def test_created_pods_are_remembered_and_existing_ones_are_not() -> None:
    async def scenario() -> None:
        store = MemoryStore()
        j = job([task("worker", 2)], name="train", phase="Pending")
        spec = j.spec.tasks[0]  # type: ignore[index, union-attr]
        first, second = build_job_pod(j, spec, 0), build_job_pod(j, spec, 1)
        await store.create(first)  # an earlier pass created it; the watch has not told us yet
        remembered: list[Pod | PodGroup] = []
        executor = PlanExecutor(store, _no_history, source="test", remember=remembered.append)

        await executor.execute(j, Plan(pods_to_create=(first, second)))

        assert [p.metadata.name for p in remembered] == ["train-worker-1"]
        stored = await store.get(Pod, "ns", "train-worker-1")
        # What is remembered is the stored object (uid and revision), so the watch's copy is an echo.
        assert remembered[0].metadata.uid == stored.metadata.uid
        assert remembered[0].metadata.resource_version == stored.metadata.resource_version

    asyncio.run(scenario())


def test_the_controller_sees_what_it_created_before_its_watch_does() -> None:
    """The next pass over the job finds the pods and the PodGroup it created (else it creates them
    again: under load the watch lags a pass behind, and each re-create cost a write and an event)."""

    async def scenario() -> None:
        store = MemoryStore()
        controller = JobController(store, _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]
        j = job([task("worker", 2)], name="train", phase="Pending")
        spec = j.spec.tasks[0]  # type: ignore[index, union-attr]
        pods = (build_job_pod(j, spec, 0), build_job_pod(j, spec, 1))
        group = build_podgroup(j, {})

        plan = Plan(podgroup_to_create=group, pods_to_create=pods)
        await controller.executor.execute(j, plan)

        assert set(controller.pods_by_job[("ns", "train")]) == {"train-worker-0", "train-worker-1"}
        assert controller.podgroups.get("ns", group.metadata.name or "") is not None
        assert ("ns", "train") in controller.pending  # and the job is looked at again

    asyncio.run(scenario())


def test_a_gangs_pods_are_created_together_not_one_round_trip_each() -> None:
    class GatedStore(MemoryStore):
        """Each pod create waits until the whole gang's creates are in flight at once."""

        def __init__(self, gang: int) -> None:
            super().__init__()
            self.together = asyncio.Barrier(gang)

        async def create(self, obj):  # type: ignore[no-untyped-def]
            if isinstance(obj, Pod):
                await self.together.wait()
            return await super().create(obj)

    async def scenario() -> None:
        j = job([task("worker", 10)], name="gang", phase="Pending")
        spec = j.spec.tasks[0]  # type: ignore[index, union-attr]
        store = GatedStore(10)
        executor = PlanExecutor(store, _no_history, source="test")
        pods = tuple(build_job_pod(j, spec, i) for i in range(10))
        async with asyncio.timeout(10):  # one create at a time would never get past the barrier
            await executor.execute(j, Plan(pods_to_create=pods))
        stored, _ = await store.list(Pod, "ns")
        assert len(stored) == 10

    asyncio.run(scenario())


def test_pods_that_cannot_be_created_are_said_on_the_job_as_failed_create() -> None:
    """Volcano's FailedCreate: the history says it (and the service's Event recorder makes it a Kubernetes
    Event); the error still fails the pass, which is retried."""

    class RefusingStore(MemoryStore):
        async def create(self, obj):  # type: ignore[no-untyped-def]
            if isinstance(obj, Pod) and obj.metadata.name == "train-worker-1":
                raise InvalidObject("spec.containers[0].resources", "quota", "exceeded quota: team-a")
            return await super().create(obj)

    async def scenario() -> None:
        published: list[DomainEvent] = []

        async def publish(events: Sequence[DomainEvent]) -> int:
            published.extend(events)
            return 0

        j = job([task("worker", 2)], name="train", phase="Pending")
        spec = j.spec.tasks[0]  # type: ignore[index, union-attr]
        pods = (build_job_pod(j, spec, 0), build_job_pod(j, spec, 1))
        executor = PlanExecutor(RefusingStore(), publish, source="job-controller/a")
        with pytest.raises(InvalidObject):
            await executor.execute(j, Plan(pods_to_create=pods))
        (said,) = published
        assert (said.kind, said.name, said.reason, said.uid) == ("Job", "train", "FailedCreate", j.metadata.uid)
        assert said.message is not None and said.message.startswith("Error creating pods: ")
        assert "exceeded quota: team-a" in said.message
        assert [i.reason for i in intents_for(said)] == ["FailedCreate"]

    asyncio.run(scenario())


def test_a_controller_whose_lease_lapsed_writes_nothing_more() -> None:
    """Its every write goes through the membership's fence (one mechanism: vc_runtime.sharding.FencedStore)."""

    class Lapsed(SoleOwner):
        def can_write(self) -> bool:
            return False

    async def scenario() -> None:
        store = MemoryStore()
        controller = JobController(store, _no_history, Lapsed(), source="test")  # type: ignore[arg-type]
        j = job([task("worker", 1)], name="train", phase="Pending")
        with pytest.raises(Fenced):
            await controller.executor.execute(j, Plan(pods_to_create=(build_job_pod(j, j.spec.tasks[0], 0),)))  # type: ignore[index, union-attr]
        assert (await store.list(Pod))[0] == []

    asyncio.run(scenario())

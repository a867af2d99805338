"""A Restarting job is woken when its old PodGroup is deleted (found by `make chaos`, seed 1).

The trap: a 1-pod job fails, RestartJob kills its pod and deletes its PodGroup. If the job is looked
at once more while the old PodGroup is still in the cache (not admitted, so pods are not recounted)
it stays Restarting with `terminating: 1`; the pod and the PodGroup are then gone, and nothing else
would ever look at the job again.
"""

from __future__ import annotations

import asyncio

from tests.unit.job_controller.jc_builders import job, task, with_status
from vc_bus.testing import MemoryStore
from vc_job_controller.controller import JobController
from vc_job_controller.logic.podgroup import build_podgroup
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupStatus, Queue
from vc_runtime.sharding import SoleOwner


async def _no_history(events: object) -> int:
    return 0


def test_a_deleted_podgroup_wakes_its_restarting_job_which_makes_the_next_one() -> None:
    async def scenario() -> None:
        store = MemoryStore()
        controller = JobController(store, _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]
        default = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="default"))
        controller.queues.remember(await store.create(default))
        restarting = with_status(
            job([task("worker", 1)], name="train", phase="Restarting", version=1, retry_count=1), terminating=1
        )
        stored_job = await store.create(restarting)
        old_group = await store.create(build_podgroup(stored_job, {}))
        controller.jobs.remember(stored_job)
        pending = PodGroup(
            api_version=old_group.api_version,
            metadata=old_group.metadata,
            spec=old_group.spec,
            status=PodGroupStatus(phase="Pending"),
        )
        controller.podgroups.remember(pending)
        key = ("ns", "train")

        controller._podgroup_changed(old_group, pending)  # a phase change: looked at, old PodGroup still there
        while key in controller.pending:
            await controller._handle(key)
        assert (await store.get(type(stored_job), "ns", "train")).status.state.phase == "Restarting"  # type: ignore[union-attr]

        await store.delete(PodGroup, "ns", old_group.metadata.name or "")
        controller.podgroups.forget("ns", old_group.metadata.name or "")
        controller._podgroup_changed(pending, None)
        assert key in controller.pending  # the deletion woke the job
        while key in controller.pending:
            await controller._handle(key)
        groups, _ = await store.list(PodGroup, "ns")
        assert [g.metadata.name for g in groups] == [old_group.metadata.name]  # the next PodGroup, same name
        assert groups[0].metadata.uid != old_group.metadata.uid

    asyncio.run(scenario())

"""A job stored past admission (no webhook, or one bypassed) is run as admission would have stored it.

Volcano's own `vcctl job run -N rk -r 2 -m 2` leaves the task name empty for the mutating webhook to
default to `default0`. Acted on as stored, the job got pods `rk--0`, `rk--1` and a PodGroup whose
gang counted a task `""`: Pending for ever. The controller applies admission's defaults
(`vc_validation.admitted_job`) to what it acts on, and leaves the stored spec to its owner.
"""

from __future__ import annotations

import asyncio

from msgspec.structs import replace

from vc_bus.testing import MemoryStore
from vc_job_controller.controller import JobController, JobKey
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, TaskSpec
from vc_proto.core import Container, Pod, PodSpec, PodTemplateSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupStatus, Queue
from vc_proto.vocabulary import TASK_SPEC_KEY
from vc_runtime.sharding import SoleOwner


async def _no_history(events: object) -> int:
    return 0


def _as_vcctl_run_writes_it() -> Job:
    """`vcctl job run -N rk -r 2 -m 2 -R cpu=1`: no task name, no task minAvailable, no maxRetry,
    no schedulerName (each left for the mutating webhook)."""
    container = Container(name="rk", image="busybox", resources=ResourceRequirements(requests={"cpu": "1"}))
    template = PodTemplateSpec(spec=PodSpec(containers=[container], restart_policy="Never"))
    spec = JobSpec(min_available=2, queue="default", tasks=[TaskSpec(name="", replicas=2, template=template)])
    meta = ObjectMeta(name="rk", namespace="ns", uid="uid-rk", creation_timestamp="2026-01-02T03:00:00Z")
    return Job(api_version=BATCH_V1ALPHA1, metadata=meta, spec=spec)


async def _drain(controller: JobController, key: JobKey) -> None:
    while key in controller.pending:
        await controller._handle(key)


def test_a_job_with_an_empty_task_name_runs_its_task_as_default0() -> None:
    async def scenario() -> None:
        store = MemoryStore()
        controller = JobController(store, _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]
        default = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="default"))
        controller.queues.remember(await store.create(default))
        stored = await store.create(_as_vcctl_run_writes_it())
        controller.jobs.remember(stored)
        key = ("ns", "rk")

        controller._job_changed(None, stored)
        await _drain(controller, key)
        groups, _ = await store.list(PodGroup, "ns")
        assert [(g.spec.min_member, g.spec.min_task_member) for g in groups if g.spec] == [(2, {"default0": 2})]
        job = await store.get(Job, "ns", "rk")
        assert job.status is not None and job.status.state is not None
        assert (job.status.state.phase, job.status.state.reason) == ("Pending", "JobInitialized")  # not Invalid
        assert job.spec == stored.spec  # the user's object is not rewritten: only acted on with the defaults
        controller.jobs.remember(job)

        inqueue = replace(groups[0], status=PodGroupStatus(phase="Inqueue"))
        inqueue = await store.update(inqueue)
        controller.podgroups.remember(inqueue)
        controller._podgroup_changed(groups[0], inqueue)
        await _drain(controller, key)
        pods, _ = await store.list(Pod, "ns")
        assert sorted((p.metadata.name, (p.metadata.annotations or {}).get(TASK_SPEC_KEY)) for p in pods) == [
            ("rk-default0-0", "default0"),
            ("rk-default0-1", "default0"),
        ]

    asyncio.run(scenario())

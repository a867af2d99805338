"""The job controller decodes and caches only the pods of vcjobs (on a shared cluster most pods are not)."""

from __future__ import annotations

import asyncio
import contextlib

import msgspec

from tests.support.waiting import eventually
from vc_bus.testing import MemoryStore
from vc_job_controller.controller import JobController
from vc_proto.batch import BATCH_V1ALPHA1
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.vocabulary import JOB_NAME_KEY, JOB_VERSION_KEY, TASK_SPEC_KEY, Event
from vc_runtime.sharding import SoleOwner


async def _no_history(events: object) -> int:
    return 0


def pod(name: str, *, of_job: str | None = None) -> Pod:
    annotations = owners = None
    if of_job is not None:
        annotations = {JOB_NAME_KEY: of_job, JOB_VERSION_KEY: "0", TASK_SPEC_KEY: "worker"}
        owners = [OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name=of_job, uid="job-uid", controller=True)]
    meta = ObjectMeta(name=name, namespace="ns", annotations=annotations, owner_references=owners)
    return Pod(api_version=CORE_V1, metadata=meta, spec=PodSpec(containers=[Container(name="c", image="busybox")]))


async def test_only_vcjob_pods_reach_the_cache_and_the_jobs() -> None:
    store = MemoryStore()
    controller = JobController(store, _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]
    await store.create(pod("someone-elses"))
    await store.create(pod("train-worker-0", of_job="train"))
    shutdown = asyncio.Event()
    follow = asyncio.create_task(controller.pods.run(shutdown))
    try:
        await eventually(controller.pods.synced.is_set, what="the pod cache synced")
        await store.create(pod("another-plain-pod"))
        await store.create(pod("train-worker-1", of_job="train"))
        await eventually(lambda: len(controller.pods.items) == 2, what="both vcjob pods cached")
        assert {name for _, name in controller.pods.items} == {"train-worker-0", "train-worker-1"}
        assert set(controller.pods_by_job[("ns", "train")]) == {"train-worker-0", "train-worker-1"}
        # Someone strips a pod's annotations: the pod is still the job's child; the controller keeps its
        # copy and takes the change for nothing, as it always did (not a deletion, which is an eviction).
        stripped = await store.get(Pod, "ns", "train-worker-0")
        await store.update(
            msgspec.structs.replace(stripped, metadata=msgspec.structs.replace(stripped.metadata, annotations=None))
        )
        await eventually(lambda: _annotations_gone(controller), what="the stripped pod's new version cached")
        assert set(controller.pods_by_job[("ns", "train")]) == {"train-worker-0", "train-worker-1"}
        assert all(r.event != Event.POD_EVICTED.value for r in controller.pending.get(("ns", "train"), ()))
    finally:
        shutdown.set()
        follow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follow


def _annotations_gone(controller: JobController) -> bool:
    cached = controller.pods.get("ns", "train-worker-0")
    return cached is not None and not cached.metadata.annotations

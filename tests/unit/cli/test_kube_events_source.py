"""`vcctl job view`'s Kubernetes Events (vc_cli.kube_events_source): which Events are a job's, and a fact
both in the history and an Event shown once. Over the in-memory store."""

from __future__ import annotations

import asyncio

from vc_bus.testing import MemoryStore
from vc_cli.client import Tephra
from vc_cli.describe import DescribedEvent
from vc_cli.kube_events_source import kube_events_source, without_history_repeats
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.kube_event import Event, EventSource, ObjectReference
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import PodGroup, Queue

WHY = "2/2 tasks in gang unschedulable: 2 Insufficient nvidia.com/gpu"


class NoWrites:
    async def write(self, request: object) -> None:
        raise AssertionError("a view writes nothing")


def event(name: str, kind: str, about: str, reason: str, *, uid: str | None = None, ns: str = "team-a") -> Event:
    return Event(
        api_version="v1",
        metadata=ObjectMeta(name=name, namespace=ns),
        involved_object=ObjectReference(kind=kind, namespace=ns, name=about, uid=uid),
        reason=reason,
        message=WHY if reason == "Unschedulable" else reason.lower(),
        source=EventSource(component="vc-scheduler"),
        first_timestamp="2026-11-24T07:00:00Z",
        last_timestamp=f"2026-11-24T07:0{len(name) % 10}:00Z",
        count=3,
        type="Warning",
    )


async def seeded() -> tuple[Tephra, Job]:
    store = MemoryStore()
    job = await store.create(
        Job(api_version="batch.volcano.sh/v1alpha1", metadata=ObjectMeta(name="train", namespace="team-a"))
    )
    owner = OwnerReference(
        api_version="batch.volcano.sh/v1alpha1", kind="Job", name="train", uid=job.metadata.uid or ""
    )
    await store.create(
        PodGroup(
            api_version="scheduling.volcano.sh/v1beta1",
            metadata=ObjectMeta(name="train-pg", namespace="team-a", owner_references=[owner]),
        )
    )
    await store.create(
        Pod(
            api_version="v1",
            metadata=ObjectMeta(name="train-w-0", namespace="team-a", labels={"volcano.sh/job-name": "train"}),
        )
    )
    await store.create(Queue(api_version="scheduling.volcano.sh/v1beta1", metadata=ObjectMeta(name="research")))
    for e in (
        event("a", "PodGroup", "train-pg", "Unschedulable"),
        event("bb", "Job", "train", "PodGroupPending", uid=job.metadata.uid),
        event("ccc", "Pod", "train-w-0", "Evict"),
        event("dddd", "Job", "train", "ExecuteAction", uid="an-earlier-train"),  # a job of the same name, gone
        event("eeeee", "Job", "other", "ExecuteAction"),
        event("ffffff", "Queue", "research", "CloseQueue", ns="default"),
    ):
        await store.create(e)
    return Tephra(None, store=store, writer=NoWrites()), job  # type: ignore[arg-type]


def test_a_jobs_page_shows_the_events_about_it_its_podgroup_and_its_pods_oldest_first() -> None:
    async def scenario() -> None:
        tephra, job = await seeded()
        found = await kube_events_source(tephra, job)
        assert not isinstance(found, str)
        assert [(e.reason, e.count) for e in found] == [("Unschedulable", 3), ("PodGroupPending", 3), ("Evict", 3)]
        assert found[0].message == WHY and found[0].source == "vc-scheduler"
        queue = await tephra.store.get(Queue, None, "research")
        assert [e.reason for e in await kube_events_source(tephra, queue)] == ["CloseQueue"]  # type: ignore[union-attr]

    asyncio.run(scenario())


def test_a_history_line_that_an_event_already_says_is_left_out() -> None:
    kube = [DescribedEvent("Warning", "Unschedulable", "t0", "t1", "vc-scheduler", WHY, count=2)]
    history = [
        DescribedEvent("Warning", "Unschedulable", "t0", "t0", "scheduler/a", f"PodGroup train-pg: Pending {WHY}"),
        DescribedEvent("Normal", "PodCreated", "t0", "t0", "job-controller/a", "Pod train-w-0: created"),
    ]
    kept = without_history_repeats([*history, *kube], kube)
    assert [(e.reason, e.source) for e in kept] == [
        ("PodCreated", "job-controller/a"),
        ("Unschedulable", "vc-scheduler"),
    ]

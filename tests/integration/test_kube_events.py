"""The Kubernetes Event recorder over the embedded store, against a real nats-server: a repeat counts on
one Event, a restarted recorder does not say it again, a Job is named with its uid, and what the
services publish reaches it once (vc_runtime.event_recorder, vc_bus.events.EventPublisher's observer)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from nats.aio.client import Client

from vc_bus.events import EventPublisher, ensure_events_stream
from vc_bus.store import NatsStore
from vc_core.kube_events import EventIntent, Involved
from vc_core.store import ObjectStore
from vc_proto.batch import Job
from vc_proto.events import DomainEvent
from vc_proto.kube_event import Event
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import Queue
from vc_runtime.event_recorder import EventRecorder, cached_uid_lookup

pytestmark = [pytest.mark.nats, pytest.mark.integration]

UNFIT = "4/4 tasks in gang unschedulable: 4 Insufficient cpu"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def recorders(nc: Client, nats_store: NatsStore) -> AsyncIterator[Callable[..., EventRecorder]]:
    """Recorders over one store, each with its writer running: one per "life" of a service."""
    shutdown = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    clock = Clock()

    def start(settle_s: float = 0.05) -> EventRecorder:
        recorder = EventRecorder(
            nats_store,
            component="vc-scheduler",
            host="a",
            lookup_uid=cached_uid_lookup(nc),
            clock=clock,
            settle_s=settle_s,
        )
        tasks.append(asyncio.create_task(recorder.run(shutdown)))
        return recorder

    start.clock = clock  # type: ignore[attr-defined]
    yield start
    shutdown.set()
    await asyncio.gather(*tasks)


async def events(store: ObjectStore) -> list[Event]:
    items, _ = await store.list(Event)
    return items


def unschedulable(message: str = UNFIT) -> EventIntent:
    return EventIntent(Involved("PodGroup", "team-a", "train", "pg-uid"), "Warning", "Unschedulable", message)


async def test_a_repeat_counts_on_one_event_with_first_and_last_timestamps(
    recorders: Callable[..., EventRecorder], nats_store: NatsStore
) -> None:
    recorder = recorders()
    recorder.record(unschedulable())
    await recorder.written()
    recorders.clock.now += 90  # type: ignore[attr-defined]
    recorder.record(unschedulable())
    await recorder.written()
    (event,) = await events(nats_store)
    assert (event.type, event.reason, event.message, event.count) == ("Warning", "Unschedulable", UNFIT, 2)
    assert (event.first_timestamp, event.last_timestamp) == ("2027-01-15T08:00:00Z", "2027-01-15T08:01:30Z")
    assert event.involved_object is not None
    assert (event.involved_object.kind, event.involved_object.name, event.involved_object.uid) == (
        "PodGroup",
        "train",
        "pg-uid",
    )
    assert event.metadata.namespace == "team-a"
    assert event.source is not None and event.source.component == "vc-scheduler"


async def test_a_restarted_recorder_does_not_say_it_again(
    recorders: Callable[..., EventRecorder], nats_store: NatsStore
) -> None:
    first_life = recorders()
    first_life.record(unschedulable())
    await first_life.written()
    second_life = recorders()  # nothing in memory: it finds the Event by its name
    second_life.record(unschedulable())
    await second_life.written()
    (event,) = await events(nats_store)
    assert event.count == 1
    second_life.record(unschedulable())  # a repeat in this life counts
    await second_life.written()
    (event,) = await events(nats_store)
    assert event.count == 2


async def test_a_verdict_that_changed_while_the_recorder_was_down_is_counted_with_the_new_why(
    recorders: Callable[..., EventRecorder], nats_store: NatsStore
) -> None:
    def verdict(why: str) -> EventIntent:
        return EventIntent(
            Involved("PodGroup", "team-a", "train", "pg-uid"), "Warning", "Unschedulable", why, verdict=True
        )

    first_life = recorders()
    first_life.record(verdict("overused cpu (cluster idle 153600m)"))
    await first_life.written()
    second_life = recorders()
    second_life.record(verdict("overused cpu (cluster idle 151600m)"))
    await second_life.written()
    (event,) = await events(nats_store)
    assert (event.count, event.message) == (2, "overused cpu (cluster idle 151600m)")
    second_life.record(verdict("overused cpu (cluster idle 151600m)"))  # said once more, the same why
    third_life = recorders()
    third_life.record(verdict("overused cpu (cluster idle 151600m)"))
    await second_life.written()
    await third_life.written()
    (event,) = await events(nats_store)
    assert event.count == 3  # the second life's repeat counts; the third life's restart does not


async def test_a_jobs_event_is_named_with_its_uid_and_a_gone_object_gets_none(
    recorders: Callable[..., EventRecorder], nats_store: NatsStore
) -> None:
    job = await nats_store.create(
        Job(api_version="batch.volcano.sh/v1alpha1", metadata=ObjectMeta(name="train", namespace="team-a"))
    )
    recorder = recorders()
    recorder.observe(
        DomainEvent(
            id="1",
            occurred_at="",
            source="scheduler/a",
            kind="PodGroup",
            namespace="team-a",
            name="train",
            reason="Unschedulable",
            message=UNFIT,
            job="train",
            uid="pg-uid",
        )
    )
    recorder.record(EventIntent(Involved("Job", "team-a", "gone"), "Normal", "ExecuteAction", "x"))
    await recorder.written()
    by_kind = {e.involved_object.kind: e for e in await events(nats_store) if e.involved_object}
    assert set(by_kind) == {"PodGroup", "Job"}
    pending = by_kind["Job"]
    assert pending.involved_object is not None and pending.involved_object.uid == job.metadata.uid
    assert (pending.reason, pending.message) == (
        "PodGroupPending",
        f"PodGroup team-a:train unschedulable, reason: {UNFIT}",
    )


async def test_published_domain_events_reach_the_recorder_once(
    recorders: Callable[..., EventRecorder], nc: Client, nats_store: NatsStore
) -> None:
    await ensure_events_stream(nc)
    await nats_store.create(Queue(api_version="scheduling.volcano.sh/v1beta1", metadata=ObjectMeta(name="research")))
    recorder = recorders()
    publisher = EventPublisher(nc, observer=recorder.observe)
    closed = DomainEvent(
        id="q-1",
        occurred_at="",
        source="queue-controller",
        kind="Queue",
        name="research",
        reason="PhaseChanged",
        message="CloseQueue: queue is Closed (was Open)",
        phase="Closed",
    )
    await publisher.publish(closed)
    await publisher.publish(closed)  # a retry: the server drops it as a duplicate
    await publisher.publish_batch(
        [
            DomainEvent(
                id="p-1",
                occurred_at="",
                source="scheduler/a",
                kind="Pod",
                namespace="team-a",
                name="train-w-0",
                reason="PodBound",
                node="n1",
                uid="pod-uid",
            )
        ]
    )  # history only: no Event
    await recorder.written()
    (event,) = await events(nats_store)
    assert (event.reason, event.count, event.metadata.namespace) == ("CloseQueue", 1, "default")
    assert event.involved_object is not None and event.involved_object.kind == "Queue"


async def test_events_expire_an_hour_after_their_last_write_as_the_apiservers_do(
    nc: Client, nats_store: NatsStore
) -> None:
    status = await nc.jetstream().key_value("vc-event")
    assert (await status.status()).ttl == 3600.0
    other = await nc.jetstream().key_value("vc-job")
    assert not (await other.status()).ttl


def scheduler_says(reason: str, message: str) -> DomainEvent:
    return DomainEvent(
        id=reason,
        occurred_at="",
        source="scheduler/a",
        kind="PodGroup",
        namespace="team-a",
        name="train",
        reason=reason,
        message=message,
        job="train",
        uid="pg-uid",
    )


async def test_a_verdict_that_ends_before_it_settled_is_not_written(
    recorders: Callable[..., EventRecorder], nats_store: NatsStore
) -> None:
    await nats_store.create(
        Job(api_version="batch.volcano.sh/v1alpha1", metadata=ObjectMeta(name="train", namespace="team-a"))
    )
    recorder = recorders(settle_s=3600)
    recorder.observe(scheduler_says("Unschedulable", "1/1 tasks in gang unschedulable: pods not created yet"))
    recorder.observe(scheduler_says("Scheduled", "pod group is ready"))  # scheduled within the hour
    await recorder.written()
    assert await events(nats_store) == []
    patient = recorders(settle_s=0.05)
    patient.observe(scheduler_says("Unschedulable", UNFIT))
    await patient.written()  # stood long enough: written, counted from one
    assert sorted((e.reason, e.count) for e in await events(nats_store)) == [
        ("PodGroupPending", 1),
        ("Unschedulable", 1),
    ]

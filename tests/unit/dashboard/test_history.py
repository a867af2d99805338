"""A job's history tail from a real VC_EVT stream: the last N events found without reading the rest,
other jobs' events ignored, the count of all of them kept, and new events followed live."""

from __future__ import annotations

import pytest
from nats.aio.client import Client

from vc_bus.events import EventPublisher, ensure_events_stream
from vc_dashboard.history import follow_after, read_tail
from vc_proto.events import DomainEvent

pytestmark = [pytest.mark.nats]


def fact(job: str, i: int) -> DomainEvent:
    return DomainEvent(
        id=f"{job}-{i}",
        occurred_at="2026-01-01T00:00:00Z",
        source="test",
        kind="Pod",
        namespace="default",
        name=f"{job}-pod-{i}",
        reason="PodBound",
        job=job,
    )


async def test_the_tail_is_the_last_events_of_that_job_and_the_total_counts_all(nc: Client) -> None:
    await ensure_events_stream(nc)
    publisher = EventPublisher(nc)
    for i in range(60):
        await publisher.publish(fact("big", i))
        await publisher.publish(fact("other", i))  # interleaved: the job's events are not contiguous
    tail = await read_tail(nc, "default", "big", keep=7)
    assert [s.event.name for s in tail.events] == [f"big-pod-{i}" for i in range(53, 60)]
    assert tail.total == 60 and tail.complete
    assert tail.last_sequence == tail.events[-1].sequence
    short = await read_tail(nc, "default", "other", keep=500)
    assert len(short.events) == short.total == 60
    assert (await read_tail(nc, "default", "nobody")).events == type(tail.events)()


async def test_following_after_the_tail_gives_only_new_events(nc: Client) -> None:
    await ensure_events_stream(nc)
    publisher = EventPublisher(nc)
    for i in range(3):
        await publisher.publish(fact("live", i))
    tail = await read_tail(nc, "default", "live", keep=10)
    await publisher.publish(fact("other", 0))
    await publisher.publish(fact("live", 3))
    stream = follow_after(nc, "default", "live", after=tail.last_sequence)
    stored = await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]
    tail.add(stored)
    tail.add(stored)  # a repeat after a resume is not counted twice
    assert stored.event.name == "live-pod-3" and tail.total == 4 and len(tail.events) == 4


async def test_batched_events_are_all_in_the_tail_and_a_follower_resumes_after_the_batch(nc: Client) -> None:
    await ensure_events_stream(nc)
    publisher = EventPublisher(nc)
    await publisher.publish_batch([fact("b", i) for i in range(3)])
    await publisher.publish_batch([fact("b", i) for i in range(3, 5)])
    tail = await read_tail(nc, "default", "b", keep=10)
    assert [s.event.name for s in tail.events] == [f"b-pod-{i}" for i in range(5)]
    assert tail.total == 5 and tail.exact
    stream = follow_after(nc, "default", "b", after=tail.last_sequence)
    await publisher.publish_batch([fact("b", 5), fact("b", 6)])
    new = [await anext(stream), await anext(stream)]
    await stream.aclose()  # type: ignore[attr-defined]
    for stored in [*new, new[0]]:  # a repeat of an event inside a batch is not counted twice
        tail.add(stored)
    assert [s.event.name for s in new] == ["b-pod-5", "b-pod-6"] and tail.total == 7


async def test_a_long_batched_history_says_its_count_is_a_lower_bound(nc: Client) -> None:
    await ensure_events_stream(nc)
    publisher = EventPublisher(nc)
    for i in range(0, 30, 3):
        await publisher.publish_batch([fact("long", j) for j in range(i, i + 3)])
    tail = await read_tail(nc, "default", "long", keep=4)
    assert [s.event.name for s in tail.events] == [f"long-pod-{i}" for i in range(26, 30)]
    assert not tail.exact and 10 <= tail.total <= 30

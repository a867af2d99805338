"""The VC_EVT stream: de-duplicated publishing, full history, and a live follow that survives a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

import pytest

from tests.support.waiting import eventually
from vc_bus.connection import connect
from vc_bus.events import EventBatcher, EventPublisher, EventsNotPublished, StoredEvent, ensure_events_stream, follow
from vc_bus.server import NatsServer
from vc_proto import subjects
from vc_proto.events import DomainEvent

pytestmark = [pytest.mark.nats]


def event(i: int, job: str = "train") -> DomainEvent:
    return DomainEvent(
        id=f"{job}-{i}",
        occurred_at="2026-01-01T00:00:00Z",
        source="test",
        kind="Pod",
        namespace="default",
        name=f"{job}-w-{i}",
        reason="PodStarted",
        job=job,
    )


async def test_history_is_ordered_filtered_and_deduplicated(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server:
        async with connect(server.url, name="t") as nc:
            await ensure_events_stream(nc)
            publisher = EventPublisher(nc)
            for i in range(5):
                await publisher.publish(event(i))
                await publisher.publish(event(i, job="other"))
            await publisher.publish(event(2))  # a retry with the same id is dropped by the server
            got = [
                s async for s in follow(nc, subjects.event_filter("job", "default", "train"), stop_when_caught_up=True)
            ]
    assert [s.event.id for s in got] == [f"train-{i}" for i in range(5)]
    assert [s.sequence for s in got] == sorted(s.sequence for s in got)


@pytest.mark.parametrize("batch", [pytest.param(1, id="one-per-message"), pytest.param(4, id="batches")])
async def test_follow_survives_a_server_restart_without_gaps_or_repeats(tmp_path: Path, batch: int) -> None:
    """A follower reading while the server restarts resumes after the last event it read, whether
    events were published one per message or in batches (it resumes between batches)."""
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="pub") as pub_nc, connect(server.url, name="sub") as sub_nc:
            await ensure_events_stream(pub_nc)
            publisher = EventPublisher(pub_nc)
            received: list[StoredEvent] = []

            async def reader() -> None:
                async for stored in follow(sub_nc, subjects.event_filter("job", "default", "train")):
                    received.append(stored)
                    if len(received) == 40:
                        return

            async def publish(first: int) -> None:
                if batch == 1:
                    await publisher.publish(event(first))
                else:
                    await publisher.publish_batch([event(j) for j in range(first, first + batch)])

            async with asyncio.TaskGroup() as tg:
                tg.create_task(reader())
                for i in range(0, 20, batch):
                    await publish(i)
                await eventually(lambda: len(received) >= 20, timeout=10, interval=0.05, what="20 events read")
                server.restart()
                for i in range(20, 40, batch):
                    # The publisher's connection comes back on its own; until then a publish fails.
                    await eventually(lambda i=i: _published(publish(i)), timeout=10, what=f"events from {i} published")
            assert [s.event.id for s in received] == [f"train-{i}" for i in range(40)]
    finally:
        server.stop()


async def _published(publishing: Awaitable[None]) -> bool:
    try:
        await publishing
    except Exception:
        return False
    return True


async def test_a_batch_is_one_message_per_subject_read_back_event_by_event_in_order(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server:
        async with connect(server.url, name="t") as nc:
            await ensure_events_stream(nc)
            publisher = EventPublisher(nc)
            batch = [event(0), event(0, job="other"), event(1), event(2)]
            await publisher.publish_batch(batch)
            await publisher.publish_batch(batch)  # a retry of the same batch is dropped by the server
            await publisher.publish_batch([event(3)])
            js = nc.jetstream()
            info = await js.stream_info(subjects.EVENTS_STREAM)
            assert info.state.messages == 3  # train's three events, other's one, then train's fourth
            other = await js.get_last_msg(subjects.EVENTS_STREAM, subjects.event_subject("job", "default", "other"))
            assert other.data.startswith(b"{")  # a subject's single event keeps the single-event format
            last = await js.get_last_msg(subjects.EVENTS_STREAM, subjects.event_subject("job", "default", "train"))
            assert last.data.startswith(b"{") and last.headers == {"Nats-Msg-Id": "train-3"}
            train = subjects.event_filter("job", "default", "train")
            got = [s async for s in follow(nc, train, stop_when_caught_up=True)]
    assert [s.event.id for s in got] == [f"train-{i}" for i in range(4)]
    assert [s.index for s in got] == [0, 1, 2, 0]
    assert got[0].sequence == got[1].sequence == got[2].sequence < got[3].sequence
    assert [s.position for s in got] == sorted(s.position for s in got)


async def test_a_message_that_is_no_event_nor_a_list_of_them_is_skipped(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server:
        async with connect(server.url, name="t") as nc:
            await ensure_events_stream(nc)
            subject = subjects.event_subject("job", "default", "train")
            await nc.jetstream().publish(subject, b'[{"id": 1}]')
            await nc.jetstream().publish(subject, b"[]")
            await EventPublisher(nc).publish_batch([event(0), event(1)])
            train = subjects.event_filter("job", "default", "train")
            got = [s async for s in follow(nc, train, stop_when_caught_up=True)]
    assert [s.event.id for s in got] == ["train-0", "train-1"]


async def test_events_published_close_together_are_one_write(tmp_path: Path) -> None:
    """EventBatcher: a gang's binds finishing together publish one message per job, and every caller
    returns once it is stored."""
    with NatsServer(tmp_path / "nats") as server:
        async with connect(server.url, name="t") as nc:
            await ensure_events_stream(nc)
            batcher = EventBatcher(EventPublisher(nc).publish_batch, window_s=0.05)
            await asyncio.gather(*(batcher.publish(event(i, job=job)) for job in ("a", "b") for i in range(10)))
            info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM)
            assert info.state.messages == 2  # one per job's subject
            got = [s async for s in follow(nc, subjects.event_filter("job"), stop_when_caught_up=True)]
    assert sorted(s.event.id for s in got) == sorted(f"{job}-{i}" for job in ("a", "b") for i in range(10))


async def test_a_failed_batch_fails_every_caller_in_it() -> None:
    calls: list[list[DomainEvent]] = []

    async def broken(events: list[DomainEvent]) -> None:
        calls.append(events)
        raise ConnectionError("no JetStream")

    batcher = EventBatcher(broken, window_s=0.01)
    outcomes = await asyncio.gather(*(batcher.publish(event(i)) for i in range(3)), return_exceptions=True)
    assert [len(c) for c in calls] == [3]
    assert isinstance(outcomes[0], ConnectionError)
    assert all(isinstance(o, EventsNotPublished) for o in outcomes[1:])

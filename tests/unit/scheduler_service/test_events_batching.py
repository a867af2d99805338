"""The scheduler's history: a gang's PodBound records, published as its binds finish, are one write."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client

from vc_bus.events import EventPublisher, ensure_events_stream, follow
from vc_proto import subjects
from vc_proto.core import CORE_V1, Pod
from vc_proto.meta import ObjectMeta
from vc_scheduler import events as scheduler_events
from vc_scheduler.events import SchedulerEvents

pytestmark = [pytest.mark.nats]


def gang_pod(i: int) -> Pod:
    meta = ObjectMeta(name=f"g-w-{i}", namespace="ns", uid=f"uid-{i}", labels={"volcano.sh/job-name": "g"})
    return Pod(api_version=CORE_V1, metadata=meta)


async def test_a_gangs_bind_records_are_one_message(nc: Client) -> None:
    await ensure_events_stream(nc)
    events = SchedulerEvents(EventPublisher(nc).publish, source="scheduler/test")
    await asyncio.gather(*(events.pod(gang_pod(i), "PodBound", f"bound g-w-{i}", node="n1") for i in range(10)))
    info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM)
    assert info.state.messages == 1
    got = [s async for s in follow(nc, subjects.event_filter("job", "ns", "g"), stop_when_caught_up=True)]
    assert [s.event.name for s in got] == [f"g-w-{i}" for i in range(10)]


async def test_any_other_publish_callable_is_used_as_it_is() -> None:
    seen: list[str] = []

    async def publish(event: object) -> None:
        seen.append(event.name)  # type: ignore[attr-defined]

    await SchedulerEvents(publish, source="test").pod(gang_pod(0), "PodBound", "bound", node="n1")
    assert seen == ["g-w-0"]


async def test_records_a_moment_apart_share_the_write_and_only_the_first_waits_for_it(
    nc: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scheduler_events, "BATCH_WINDOW_S", 0.5)
    await ensure_events_stream(nc)
    events = SchedulerEvents(EventPublisher(nc).publish, source="scheduler/test")
    first = asyncio.create_task(events.pod(gang_pod(0), "PodBound", "bound g-w-0", node="n1"))
    await asyncio.sleep(0.01)  # the next bind is acknowledged a little later, inside the window
    await events.pod(gang_pod(1), "PodBound", "bound g-w-1", node="n1")
    assert not first.done()  # the second returned without waiting for the write
    await first
    info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM)
    assert info.state.messages == 1

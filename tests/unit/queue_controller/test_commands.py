"""Queue Commands over the in-memory store: deleted before acting, so taken at most once even when two
instances both believe they own the queue (split brain); the action then runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from vc_bus.testing import MemoryStore
from vc_proto.bus import BUS_V1ALPHA1, Command
from vc_proto.events import DomainEvent
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec
from vc_queue_controller.caches import QueueCaches
from vc_queue_controller.controller import QueueController
from vc_queue_controller.keys import Key, command_key, queue_key
from vc_runtime.sharding import FencedStore, SoleOwner


@asynccontextmanager
async def controller(store: MemoryStore, events: list[DomainEvent]) -> AsyncIterator[QueueController]:
    submitted: list[Key] = []
    caches = QueueCaches(store, submit_queue=lambda n: None, submit_command=lambda k: None)

    async def publish(event: DomainEvent) -> None:
        events.append(event)

    qc = QueueController(
        caches=caches,
        writer=FencedStore(store, SoleOwner()),
        ownership=SoleOwner(),
        publish=publish,
        submit=submitted.append,
    )
    shutdown = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        for informer in caches.informers:
            tg.create_task(informer.run(shutdown))
        await asyncio.sleep(0.01)
        try:
            yield qc
        finally:
            shutdown.set()


def close_command(target: Queue) -> Command:
    ref = OwnerReference(api_version=SCHEDULING_V1BETA1, kind="Queue", name="q", uid=target.metadata.uid or "")
    return Command(
        api_version=BUS_V1ALPHA1,
        metadata=ObjectMeta(name="q-closequeue-x", namespace="default"),
        action="CloseQueue",
        target=ref,
    )


async def test_two_instances_take_a_command_once() -> None:
    store = MemoryStore()
    queue = await store.create(Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="q"), spec=QueueSpec()))
    await store.create(close_command(queue))
    events: list[DomainEvent] = []
    async with controller(store, events) as a, controller(store, events) as b:
        await asyncio.sleep(0.01)
        key = command_key("default", "q-closequeue-x")
        await asyncio.gather(a.handle(key), b.handle(key))
        assert [e.reason for e in events] == ["CommandIssued"]
        assert not (await store.list(Command))[0]
        for qc in (a, b):
            await qc.handle(queue_key("q"))
    closed = await store.get(Queue, None, "q")
    assert closed.status is not None and closed.status.state == "Closed"
    assert closed.spec is not None and closed.spec.parent == "root"

"""The queue controller on a real nats-server: Commands drive Open/Closing/Closed, the hierarchy
follows its parent, and two instances write each queue from exactly one of them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

import msgspec
import pytest
from nats.js.errors import BadRequestError
from prometheus_client import REGISTRY

from tests.support.inprocess import WriteLog, memberships_settled, run_app
from tests.support.waiting import eventually
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import Conflict, NotFound
from vc_proto.bus import BUS_V1ALPHA1, Command
from vc_proto.kinds import KubeObject
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec, PodGroupStatus, Queue, QueueSpec
from vc_queue_controller.app import QueueControllerApp

pytestmark = [pytest.mark.nats, pytest.mark.integration]
ObjT = TypeVar("ObjT", bound=KubeObject)
T = TypeVar("T")


# -- harness: the real app in-process, its store wrapped to count writes per key ---------------------
@contextlib.asynccontextmanager
async def running(url: str, instance: str, log: WriteLog | None = None) -> AsyncIterator[QueueControllerApp]:
    async with run_app(QueueControllerApp, "queue-controller", url, instance, log) as app:
        yield app


# -- builders ------------------------------------------------------------------------------------------
def queue(name: str, parent: str | None = None) -> Queue:
    spec = QueueSpec(weight=1, parent=parent)
    return Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name=name), spec=spec)


def podgroup(name: str, queue_name: str, phase: str = "Running") -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(min_member=1, queue=queue_name),
        status=PodGroupStatus(phase=phase),
    )


def command(action: str, target: Queue) -> Command:
    return Command(
        api_version=BUS_V1ALPHA1,
        metadata=ObjectMeta(generate_name=f"{target.metadata.name}-{action.lower()}-", namespace="default"),
        action=action,
        target=OwnerReference(
            api_version=SCHEDULING_V1BETA1,
            kind="Queue",
            name=target.metadata.name or "",
            uid=target.metadata.uid or "",
            controller=True,
        ),
    )


async def state(store: NatsStore, name: str) -> str | None:
    try:
        q = await store.get(Queue, None, name)
    except NotFound:
        return None
    return q.status.state if q.status else None


async def no_commands(store: NatsStore) -> bool:
    return not (await store.list(Command))[0]


# -- tests ---------------------------------------------------------------------------------------------
async def test_default_and_root_queues_always_exist(nats_server: NatsServer, nats_store: NatsStore) -> None:
    async with running(nats_server.url, "qc-a"):
        await eventually(lambda: _both_open(nats_store))
        await _delete_racing_the_controller(nats_store, "default")
        await eventually(lambda: _both_open(nats_store))
    root = await nats_store.get(Queue, None, "root")
    default = await nats_store.get(Queue, None, "default")
    assert root.spec is not None and root.spec.reclaimable is False and root.spec.weight == 1
    assert default.spec is not None and default.spec.reclaimable is True and default.spec.parent == "root"


async def _delete_racing_the_controller(store: NatsStore, name: str) -> None:
    """The controller may be writing the queue right now: retry until our delete wins."""
    for _ in range(50):
        try:
            await store.delete(Queue, None, name)
            return
        except (Conflict, BadRequestError):  # BadRequestError: NatsStore.delete's lost CAS (see report)
            await asyncio.sleep(0.05)
    raise AssertionError(f"could not delete queue {name}")


async def _both_open(store: NatsStore) -> bool:
    return await state(store, "root") == "Open" and await state(store, "default") == "Open"


async def test_close_with_podgroups_drains_then_reopens(nats_server: NatsServer, nats_store: NatsStore) -> None:
    q = await nats_store.create(queue("q1"))
    await nats_store.create(podgroup("pg1", "q1"))
    async with running(nats_server.url, "qc-a"):
        await eventually(lambda: _counts(nats_store, "q1", running=1))
        assert REGISTRY.get_sample_value("volcano_queue_pod_group_running_count", {"queue_name": "q1"}) == 1
        stored = await nats_store.get(Queue, None, "q1")
        assert stored.spec is not None and stored.spec.parent == "root"
        await nats_store.create(command("CloseQueue", q))
        await eventually(lambda: _is(nats_store, "q1", "Closing"))
        assert await no_commands(nats_store)
        await nats_store.delete(PodGroup, "default", "pg1")
        await eventually(lambda: _is(nats_store, "q1", "Closed"))
        await nats_store.create(command("OpenQueue", q))
        await eventually(lambda: _is(nats_store, "q1", "Open"))
        await eventually(lambda: no_commands(nats_store))


async def test_closing_queue_drained_while_controller_was_down_closes_after_restart(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    q = await nats_store.create(queue("q2"))
    await nats_store.create(podgroup("pg2", "q2"))
    async with running(nats_server.url, "qc-a"):
        await nats_store.create(command("CloseQueue", q))
        await eventually(lambda: _is(nats_store, "q2", "Closing"))
    await nats_store.delete(PodGroup, "default", "pg2")  # no controller is running now
    async with running(nats_server.url, "qc-a"):
        await eventually(lambda: _is(nats_store, "q2", "Closed"))


async def test_inqueue_figures_are_counted_and_exported(nats_server: NatsServer, nats_store: NatsStore) -> None:
    await nats_store.create(queue("qi"))
    inqueue = podgroup("pg-in", "qi", phase="Inqueue")
    spec = msgspec.structs.replace(inqueue.spec or PodGroupSpec(), min_resources={"cpu": "2", "memory": "1Gi"})
    await nats_store.create(msgspec.structs.replace(inqueue, spec=spec))
    async with running(nats_server.url, "qc-a"):
        await eventually(lambda: _inqueue(nats_store, "qi", 1))
        labels = {"queue_name": "qi"}
        assert REGISTRY.get_sample_value("volcano_queue_pod_group_inqueue_count", labels) == 1
        assert REGISTRY.get_sample_value("volcano_queue_inqueue_milli_cpu", labels) == 2000
        assert REGISTRY.get_sample_value("volcano_queue_inqueue_memory_bytes", labels) == 2**30


async def _inqueue(store: NatsStore, name: str, count: int) -> bool:
    q = await store.get(Queue, None, name)
    return q.status is not None and q.status.inqueue == count


async def test_parent_closes_and_reopens_its_children(nats_server: NatsServer, nats_store: NatsStore) -> None:
    parent = await nats_store.create(queue("p"))
    await nats_store.create(queue("c", parent="p"))
    await nats_store.create(queue("own", parent="p"))
    async with running(nats_server.url, "qc-a"):
        await eventually(lambda: _is(nats_store, "c", "Open"))
        await nats_store.create(command("CloseQueue", await nats_store.get(Queue, None, "own")))
        await eventually(lambda: _is(nats_store, "own", "Closed"))
        await nats_store.create(command("CloseQueue", parent))
        await eventually(lambda: _is(nats_store, "c", "Closed"))
        child = await nats_store.get(Queue, None, "c")
        assert (child.metadata.annotations or {}).get("volcano.sh/closed-by-parent") == "true"
        await nats_store.create(command("OpenQueue", child))  # refused while the parent is closed
        await eventually(lambda: no_commands(nats_store))
        assert await state(nats_store, "c") == "Closed"
        await nats_store.create(command("OpenQueue", parent))
        await eventually(lambda: _is(nats_store, "c", "Open"))
        assert await state(nats_store, "own") == "Closed"  # closed by its user, not by the parent


async def test_two_instances_write_each_queue_from_one(nats_server: NatsServer, nats_store: NatsStore) -> None:
    log = WriteLog()
    async with running(nats_server.url, "qc-a", log) as a, running(nats_server.url, "qc-b", log) as b:
        await memberships_settled(a, b)
        names = [f"q{i}" for i in range(16)]
        queues = [await nats_store.create(queue(n)) for n in names]
        for n in names:
            await nats_store.create(podgroup(f"pg-{n}", n))
        for q in queues[:8]:
            await nats_store.create(command("CloseQueue", q))
        for n in names[:8]:
            await eventually(lambda n=n: _is(nats_store, n, "Closing"))  # type: ignore[misc]
        for n in names:
            await nats_store.delete(PodGroup, "default", f"pg-{n}")
        for n in names[:8]:
            await eventually(lambda n=n: _is(nats_store, n, "Closed"))  # type: ignore[misc]
        for n in names[8:]:
            await eventually(lambda n=n: _counts(nats_store, n, running=0))  # type: ignore[misc]
        log.closed = True
    writers = {key: who for key, who in log.writers.items() if key[0] == "Queue" and key[1] in names}
    assert set(writers) == {("Queue", n) for n in names}
    assert all(len(who) == 1 for who in writers.values()), writers
    assert {w for who in writers.values() for w in who} == {"qc-a", "qc-b"}  # both did share the work
    assert log.conflicts == 0


async def _is(store: NatsStore, name: str, expected: str) -> bool:
    return await state(store, name) == expected


async def _counts(store: NatsStore, name: str, *, running: int) -> bool:
    try:
        q = await store.get(Queue, None, name)
    except NotFound:
        return False
    return q.status is not None and q.status.running == running

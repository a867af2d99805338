"""The relay mirrors the real apiserver into the NATS KV cache, and survives an apiserver restart."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from nats.aio.client import Client
from prometheus_client import REGISTRY

from tests.kube.support import start_apiserver, stop_apiserver
from tests.support.buckets import live_keys
from tests.support.waiting import eventually
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import AlreadyExists, TemporaryError
from vc_core.store import WatchOp
from vc_kube.client import KubeClient
from vc_kube.mirrored import MirroredStore
from vc_kube.relay import Relay
from vc_kube.store import KubeStore
from vc_proto import codec, subjects
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import shard_of_group
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec
from vc_proto.selectors import pods_bound_to
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION

pytestmark = pytest.mark.kube


def queue(name: str, weight: int = 1) -> Queue:
    return Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name=name), spec=QueueSpec(weight=weight))


@pytest.fixture
async def nats(tmp_path: Path) -> AsyncIterator[Client]:
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="relay-test") as nc:
            yield nc
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def running(relay: Relay) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(relay.run())
    try:
        async with asyncio.timeout(30):
            await relay.wait_synced()
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def mirrored_queues(store: MirroredStore) -> dict[str, tuple[str | None, int | None]]:
    items, _ = await store.list(Queue)
    return {q.metadata.name or "": (q.metadata.resource_version, q.spec.weight if q.spec else None) for q in items}


async def kube_queues(store: KubeStore) -> dict[str, tuple[str | None, int | None]]:
    items, _ = await store.list(Queue)
    return {q.metadata.name or "": (q.metadata.resource_version, q.spec.weight if q.spec else None) for q in items}


async def converge(kube_store: KubeStore, mirror: MirroredStore, within_s: float = 20.0) -> None:
    async with asyncio.timeout(within_s):
        while (want := await kube_queues(kube_store)) != await mirrored_queues(mirror):
            del want
            await asyncio.sleep(0.1)


async def test_relay_mirrors_puts_and_deletes_with_the_apiservers_resource_version(
    kube: KubeClient, nats: Client
) -> None:
    store = KubeStore(kube)
    before = await store.create(queue("before"))
    relay = Relay(kube, nats, kinds=["Queue", "Pod"])
    mirror = MirroredStore(store, nats)
    async with running(relay):
        await converge(store, mirror)
        created = await store.create(queue("live", 3))
        await store.update(msgspec.structs.replace(before, spec=QueueSpec(weight=7)))
        await store.delete(Queue, None, "live", uid=created.metadata.uid)
        await converge(store, mirror)
        mirrored = await mirrored_queues(mirror)
        assert mirrored["before"][1] == 7 and "live" not in mirrored
        # A cached object carries the apiserver's resourceVersion, so it can go straight into a CAS write.
        cached, _ = await mirror.list(Queue)
        (q,) = [q for q in cached if q.metadata.name == "before"]
        await mirror.update(msgspec.structs.replace(q, spec=QueueSpec(weight=8)))
        await converge(store, mirror)


async def test_a_selected_mirror_watch_reads_the_apiservers_json(kube: KubeClient, nats: Client) -> None:
    """The mirror holds the apiserver's own JSON: a selector decides on it as on the NATS store's."""
    store = KubeStore(kube)
    containers = [Container(name="main", image="busybox")]
    for name in ("waits", "runs"):
        await store.create(
            Pod(
                api_version=CORE_V1,
                metadata=ObjectMeta(name=name, namespace="sel"),
                spec=PodSpec(containers=containers),
            )
        )
    await store.bind(await store.get(Pod, "sel", "runs"), "n1")
    mirror = MirroredStore(store, nats)
    async with running(Relay(kube, nats, kinds=["Pod"])):
        events = mirror.watch(Pod, namespace="sel", select=pods_bound_to({"n1"}))
        async with asyncio.timeout(20):
            seen = {}
            async for event in events:
                if event.op is WatchOp.SYNCED:
                    break
                seen[event.name] = event.op
            assert seen == {"waits": WatchOp.DELETE, "runs": WatchOp.PUT}
            await store.bind(await store.get(Pod, "sel", "waits"), "n1")
            async for event in events:
                assert (event.op, event.name) == (WatchOp.PUT, "waits")
                break
        await events.aclose()


async def test_a_restarted_relay_drops_objects_deleted_while_it_was_away(kube: KubeClient, nats: Client) -> None:
    store = KubeStore(kube)
    mirror = MirroredStore(store, nats)
    await store.create(queue("stays"))
    await store.create(queue("goes"))
    async with running(Relay(kube, nats, kinds=["Queue"])):
        await converge(store, mirror)
    await store.delete(Queue, None, "goes")
    await store.create(queue("new"))
    async with running(Relay(kube, nats, kinds=["Queue"])):
        await converge(store, mirror)
    assert sorted(await mirrored_queues(mirror)) == ["new", "stays"]


async def test_the_mirror_skips_and_reports_values_that_are_not_objects_of_their_key(
    kube: KubeClient, nats: Client
) -> None:
    """Anyone who reaches NATS can put into a bucket: such values are counted and skipped, never handed
    to readers nor remembered as a write's diff base, and the watch goes on with what follows."""
    store = KubeStore(kube)
    mirror = MirroredStore(store, nats)
    await store.create(queue("good"))
    labels = {"source": subjects.bucket("Queue"), "kind": "Queue"}
    before = REGISTRY.get_sample_value("tephra_decode_errors_total", labels) or 0.0
    async with running(Relay(kube, nats, kinds=["Queue"])):
        await converge(store, mirror)
        kv = await nats.jetstream().key_value(subjects.bucket("Queue"))
        await kv.put(subjects.object_key(None, "garbage"), b"{not json")
        other = codec.encode(queue("someone-else"))  # a valid Queue, but under another queue's key
        await kv.put(subjects.object_key(None, "impostor"), other)
        pod = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a-pod"}}'  # another kind
        await kv.put(subjects.object_key(None, "a-pod"), pod)
        await store.create(queue("after"))
        seen: list[str] = []
        async with asyncio.timeout(20):
            async for event in mirror.watch(Queue):
                if event.op is WatchOp.PUT:
                    seen.append(event.name)
                if "after" in seen:
                    break
    assert seen == ["good", "after"]
    assert REGISTRY.get_sample_value("tephra_decode_errors_total", labels) == before + 3
    for name in ("garbage", "impostor", "a-pod", "someone-else"):
        assert ("Queue", None, name) not in store._seen
    assert ("Queue", None, "good") in store._seen  # good values are still remembered


async def write_through(store: KubeStore, names: list[str]) -> list[str]:
    done = []
    for name in names:
        while True:
            try:
                await store.create(queue(name))
                break
            except AlreadyExists:
                break  # the create landed but its answer was lost in the crash
            except TemporaryError:
                await asyncio.sleep(0.2)
        done.append(name)
        await asyncio.sleep(0.05)
    return done


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_relay_resumes_after_an_apiserver_restart_without_missing_an_event(
    kube: KubeClient, nats: Client
) -> None:
    store = KubeStore(kube)
    mirror = MirroredStore(store, nats)
    for i in range(5):
        await store.create(queue(f"q{i}"))
    relay = Relay(kube, nats, kinds=["Queue"])
    # Every change the mirror's change feed shows, in order: nothing may be skipped.
    feed: list[tuple[WatchOp, str]] = []

    async def follow() -> None:
        async for event in mirror.watch(Queue):
            if event.op is not WatchOp.SYNCED:
                feed.append((event.op, event.name))

    follower = asyncio.create_task(follow())
    try:
        async with running(relay):
            await converge(store, mirror)
            # A writer keeps creating queues through the restart (retrying while the apiserver is down).
            writer = asyncio.create_task(write_through(store, [f"w{i}" for i in range(40)]))
            await asyncio.sleep(0.5)
            await asyncio.to_thread(stop_apiserver)
            await asyncio.sleep(2)  # the relay is now retrying against a dead apiserver
            await asyncio.to_thread(start_apiserver)
            store2 = store
            await store2.create(queue("after-restart", 2))
            q1 = await store2.get(Queue, None, "q1")
            await store2.update(msgspec.structs.replace(q1, spec=QueueSpec(weight=9)))
            await store2.delete(Queue, None, "q2")
            written = await writer
            await converge(store2, mirror, within_s=60)
            assert set(written) <= set(await mirrored_queues(mirror))
            mirrored = await mirrored_queues(mirror)
            assert mirrored["q1"][1] == 9 and "q2" not in mirrored and "after-restart" in mirrored
            assert (WatchOp.DELETE, "q2") in feed and (WatchOp.PUT, "after-restart") in feed
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


async def mirrored_pod_keys(nats: Client) -> list[str]:
    return await live_keys(nats, subjects.bucket("Pod"))


async def until_pod_keys(nats: Client, want: list[str]) -> None:
    async def mirrored() -> bool:
        return await mirrored_pod_keys(nats) == want

    await eventually(mirrored, what=f"the mirror's pod keys are {want}")


async def test_the_mirror_keeps_a_pod_under_its_groups_shard_as_its_group_changes_and_it_goes(
    kube: KubeClient, nats: Client
) -> None:
    """The apiserver lets a pod's group-name annotation change and tells a deletion by name only."""
    store = KubeStore(kube)
    meta = ObjectMeta(name="p", namespace="shards", annotations={GROUP_NAME_ANNOTATION: "first"})
    created = await store.create(
        Pod(api_version=CORE_V1, metadata=meta, spec=PodSpec(containers=[Container(name="main", image="busybox")]))
    )
    await NatsStore(nats).ensure(["Pod"])
    old_layout = await nats.jetstream().key_value(subjects.bucket("Pod"))
    await old_layout.put(subjects.object_key("shards", "p"), codec.encode(created))  # an earlier release's key
    async with running(Relay(kube, nats, kinds=["Pod"])):
        await until_pod_keys(nats, [subjects.pod_key("shards", shard_of_group("shards", "first"), "p")])
        current = await store.get(Pod, "shards", "p")
        moved = msgspec.structs.replace(
            current, metadata=msgspec.structs.replace(current.metadata, annotations={GROUP_NAME_ANNOTATION: "second"})
        )
        await store.update(moved)
        await until_pod_keys(nats, [subjects.pod_key("shards", shard_of_group("shards", "second"), "p")])
        await store.delete(Pod, "shards", "p")
        await until_pod_keys(nats, [])

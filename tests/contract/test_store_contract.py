"""One behaviour suite for every ObjectStore: the real NATS KV backend, the in-memory fake and the kube
adapter on a real kube-apiserver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_bus.testing import MemoryStore
from vc_core.errors import AlreadyExists, Conflict, InvalidObject, NotFound, PreconditionFailed
from vc_core.store import ObjectStore, WatchEvent, WatchOp
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import SHARDS, default_group, shard_of_group
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec
from vc_proto.selectors import pods_bound_to, pods_naming_no_group
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION


@pytest.fixture(
    params=[pytest.param("nats", marks=pytest.mark.nats), "memory", pytest.param("kube", marks=pytest.mark.kube)]
)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ObjectStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "kube":
        # A real kube-apiserver from `make kube-up`; skipped (with the reason) when there is none.
        from tests.kube.support import exclusive_kube, unavailable_reason
        from vc_kube.store import KubeStore

        reason = unavailable_reason()
        if reason:
            pytest.skip(reason)
        async with exclusive_kube() as kube:
            yield KubeStore(kube)
        return
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="contract") as nc:
            nats_store = NatsStore(nc)
            await nats_store.ensure()
            yield nats_store
    finally:
        server.stop()


def queue(name: str, weight: int = 1) -> Queue:
    return Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name=name), spec=QueueSpec(weight=weight))


def pod(name: str, namespace: str = "ns1", node: str | None = None) -> Pod:
    # One container: a real apiserver refuses a pod without any.
    spec = PodSpec(node_name=node, containers=[Container(name="main", image="busybox")])
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace=namespace), spec=spec)


async def take_until_synced(events: AsyncIterator[WatchEvent]) -> list[WatchEvent]:
    out = []
    async with asyncio.timeout(10):
        async for event in events:
            out.append(event)
            if event.op is WatchOp.SYNCED:
                break
    return out


async def take(events: AsyncIterator[WatchEvent], count: int) -> list[WatchEvent]:
    out = []
    async with asyncio.timeout(10):
        async for event in events:
            out.append(event)
            if len(out) == count:
                break
    return out


async def test_create_fills_identity_and_revision(store: ObjectStore) -> None:
    created = await store.create(queue("q1"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert int(created.metadata.resource_version or 0) > 0
    fetched = await store.get(Queue, None, "q1")
    assert fetched == created


async def test_create_twice_is_already_exists(store: ObjectStore) -> None:
    await store.create(queue("q1"))
    with pytest.raises(AlreadyExists):
        await store.create(queue("q1"))


def grouped_pod(name: str, group: str) -> Pod:
    plain = pod(name)
    return msgspec.structs.replace(
        plain, metadata=msgspec.structs.replace(plain.metadata, annotations={GROUP_NAME_ANNOTATION: group})
    )


def groups_in_distinct_shards(count: int, namespace: str = "ns1") -> list[str]:
    """PodGroup names whose pods the NATS store keeps under `count` different shards."""
    by_shard: dict[int, str] = {}
    for i in range(10 * SHARDS):
        by_shard.setdefault(shard_of_group(namespace, f"g-{i}"), f"g-{i}")
    return list(by_shard.values())[:count]


def group_of_stored(pod_: Pod) -> str | None:
    return (pod_.metadata.annotations or {}).get(GROUP_NAME_ANNOTATION)


async def test_a_pods_name_is_held_once_whatever_its_group(store: ObjectStore) -> None:
    first, other = groups_in_distinct_shards(2)
    await store.create(grouped_pod("p1", first))
    with pytest.raises(AlreadyExists):
        await store.create(grouped_pod("p1", other))
    assert group_of_stored(await store.get(Pod, "ns1", "p1")) == first
    pods, _ = await store.list(Pod, "ns1")
    assert [group_of_stored(p) for p in pods] == [first]


async def test_racing_creates_of_one_name_in_many_groups_exactly_one_wins(store: ObjectStore) -> None:
    groups = groups_in_distinct_shards(8)
    results = await asyncio.gather(*(store.create(grouped_pod("p2", g)) for g in groups), return_exceptions=True)
    winners = [r for r in results if isinstance(r, Pod)]
    assert len(winners) == 1, results
    assert all(isinstance(r, AlreadyExists) for r in results if not isinstance(r, Pod))
    assert group_of_stored(await store.get(Pod, "ns1", "p2")) == group_of_stored(winners[0])


async def test_a_pod_created_again_in_another_group_is_the_one_its_name_finds(store: ObjectStore) -> None:
    first, other = groups_in_distinct_shards(2)
    old = await store.create(grouped_pod("p3", first))
    await store.delete(Pod, "ns1", "p3", uid=old.metadata.uid)
    new = await store.create(grouped_pod("p3", other))
    current = await store.get(Pod, "ns1", "p3")
    assert current.metadata.uid == new.metadata.uid and group_of_stored(current) == other
    await store.delete(Pod, "ns1", "p3")
    with pytest.raises(NotFound):
        await store.get(Pod, "ns1", "p3")
    pods, _ = await store.list(Pod, "ns1")
    assert pods == []


async def test_an_embedded_store_refuses_to_move_a_pod_to_another_group(store: ObjectStore) -> None:
    """A pod's key carries its group's shard: the embedded stores refuse a change of group, naming the
    field and the rule, and change nothing. The apiserver allows it (annotations are mutable); the relay
    moves its mirror instead (tests/kube/test_relay.py)."""
    if not isinstance(store, NatsStore | MemoryStore):
        pytest.skip("the apiserver allows a pod's annotations to change")
    first, other = groups_in_distinct_shards(2)
    created = await store.create(grouped_pod("p4", first))
    moved = msgspec.structs.replace(
        created, metadata=msgspec.structs.replace(created.metadata, annotations={GROUP_NAME_ANNOTATION: other})
    )
    with pytest.raises(InvalidObject) as refused:
        await store.update(moved)
    assert (refused.value.field, refused.value.rule) == (f"metadata.annotations[{GROUP_NAME_ANNOTATION}]", "immutable")
    assert await store.get(Pod, "ns1", "p4") == created
    # Other annotations and the same group stay writable.
    kept = msgspec.structs.replace(
        created,
        metadata=msgspec.structs.replace(created.metadata, annotations={GROUP_NAME_ANNOTATION: first, "a": "b"}),
    )
    assert (await store.update(kept)).metadata.annotations == {GROUP_NAME_ANNOTATION: first, "a": "b"}


async def test_generate_name_creates_distinct_objects(store: ObjectStore) -> None:
    template = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(generate_name="gen-"))
    first, second = await store.create(template), await store.create(template)
    assert first.metadata.name != second.metadata.name
    assert (first.metadata.name or "").startswith("gen-")


async def test_update_with_stale_revision_is_conflict_for_the_second_writer(store: ObjectStore) -> None:
    base = await store.create(queue("q1"))
    writer_a = msgspec.structs.replace(base, spec=QueueSpec(weight=2))
    writer_b = msgspec.structs.replace(base, spec=QueueSpec(weight=3))
    await store.update(writer_a)
    with pytest.raises(Conflict):
        await store.update(writer_b)
    current = await store.get(Queue, None, "q1")
    assert current.spec is not None and current.spec.weight == 2


async def test_concurrent_cas_writers_exactly_one_wins_each_round(store: ObjectStore) -> None:
    base = await store.create(queue("q1"))
    results = await asyncio.gather(
        *(store.update(msgspec.structs.replace(base, spec=QueueSpec(weight=w))) for w in range(2, 12)),
        return_exceptions=True,
    )
    winners = [r for r in results if isinstance(r, Queue)]
    assert len(winners) == 1
    assert all(isinstance(r, Conflict) for r in results if not isinstance(r, Queue))


async def test_update_of_missing_object_is_not_found(store: ObjectStore) -> None:
    created = await store.create(queue("q1"))
    await store.delete(Queue, None, "q1")
    with pytest.raises(NotFound):
        await store.update(created)


async def test_delete_with_stale_revision_or_uid_is_conflict(store: ObjectStore) -> None:
    created = await store.create(queue("q1"))
    # A real change: an apiserver does not bump resourceVersion for a no-op write.
    await store.update(msgspec.structs.replace(created, spec=QueueSpec(weight=2)))
    with pytest.raises(Conflict):
        await store.delete(Queue, None, "q1", resource_version=created.metadata.resource_version)
    with pytest.raises(Conflict):
        await store.delete(Queue, None, "q1", uid="someone-else")
    await store.delete(Queue, None, "q1", uid=created.metadata.uid)
    with pytest.raises(NotFound):
        await store.get(Queue, None, "q1")


async def test_delete_of_running_pod_is_graceful_unless_forced(store: ObjectStore) -> None:
    await store.create(pod("p1", node="n1"))
    await store.delete(Pod, "ns1", "p1")
    marked = await store.get(Pod, "ns1", "p1")
    assert marked.metadata.deletion_timestamp is not None
    assert marked.metadata.deletion_grace_period_seconds == 30
    await store.delete(Pod, "ns1", "p1", grace=False)
    with pytest.raises(NotFound):
        await store.get(Pod, "ns1", "p1")


async def test_invalid_names_are_rejected_with_the_field(store: ObjectStore) -> None:
    with pytest.raises(InvalidObject) as err:
        await store.create(queue("Bad_Name"))
    assert err.value.field == "metadata.name"
    with pytest.raises(InvalidObject) as err:
        await store.create(pod("p", namespace="x" * 64))
    assert err.value.field == "metadata.namespace"


async def test_names_with_dots_do_not_collide(store: ObjectStore) -> None:
    await store.create(pod("a.b"))
    await store.create(pod("a-b"))
    assert (await store.get(Pod, "ns1", "a.b")).metadata.name == "a.b"
    items, _ = await store.list(Pod)
    assert sorted(p.metadata.name or "" for p in items) == ["a-b", "a.b"]


async def test_list_filters_by_namespace_and_reports_its_revision(store: ObjectStore) -> None:
    await store.create(pod("p1", "ns1"))
    await store.create(pod("p2", "ns2"))
    last = await store.create(pod("p3", "ns1"))
    items, revision = await store.list(Pod, namespace="ns1")
    assert sorted(p.metadata.name or "" for p in items) == ["p1", "p3"]
    assert revision >= int(last.metadata.resource_version or 0)


async def test_watch_from_zero_replays_state_then_syncs_then_follows(store: ObjectStore) -> None:
    await store.create(queue("q1"))
    gone = await store.create(queue("q2"))
    await store.delete(Queue, None, "q2", uid=gone.metadata.uid)
    events = store.watch(Queue)
    # Up to SYNCED: a KV store may replay the delete marker of q2, an apiserver list does not.
    first = await take_until_synced(events)
    assert [e.op for e in first if e.op is not WatchOp.DELETE] == [WatchOp.PUT, WatchOp.SYNCED]
    await store.create(queue("q3"))
    (live,) = await take(events, 1)
    assert live.op is WatchOp.PUT and live.name == "q3"
    await events.aclose()


async def test_watch_from_revision_sees_only_newer_changes(store: ObjectStore) -> None:
    await store.create(queue("q1"))
    _, revision = await store.list(Queue)
    await store.create(queue("q2"))
    await store.delete(Queue, None, "q1")
    events = store.watch(Queue, from_revision=revision)
    seen = await take(events, 2)
    assert [(e.op, e.name) for e in seen] == [(WatchOp.PUT, "q2"), (WatchOp.DELETE, "q1")]
    await events.aclose()


def volcano_pod(name: str, annotations: dict[str, str] | None = None) -> Pod:
    spec = PodSpec(scheduler_name="volcano", containers=[Container(name="main", image="busybox")])
    meta = ObjectMeta(name=name, namespace="ns1", annotations=annotations)
    return Pod(api_version=CORE_V1, metadata=meta, spec=spec)


async def test_a_selected_watch_yields_only_selected_objects(store: ObjectStore) -> None:
    await store.create(pod("unbound"))
    bound = await store.create(pod("bound"))
    await store.bind(bound, "n1")
    await store.bind(await store.create(pod("elsewhere")), "n2")
    events = store.watch(Pod, select=pods_bound_to({"n1"}))
    first = await take_until_synced(events)
    # A refused object is seen as a DELETE, never as a PUT (a reader holding it drops it).
    assert {e.name for e in first if e.op is WatchOp.PUT} == {"bound"}
    assert all(e.obj is None for e in first if e.op is not WatchOp.PUT)
    late = await store.get(Pod, "ns1", "unbound")
    await store.bind(late, "n1")
    (entered,) = await take(events, 1)
    assert entered.op is WatchOp.PUT and entered.name == "unbound"
    assert isinstance(entered.obj, Pod) and entered.obj.spec and entered.obj.spec.node_name == "n1"
    await events.aclose()


async def test_an_object_leaving_the_selection_is_seen_deleted(store: ObjectStore) -> None:
    created = await store.create(volcano_pod("p1"))
    events = store.watch(Pod, select=pods_naming_no_group({"volcano"}))
    first = await take_until_synced(events)
    assert [e.name for e in first if e.op is WatchOp.PUT] == ["p1"]
    annotations = {GROUP_NAME_ANNOTATION: default_group(created)}  # what the podgroup controller writes
    await store.update(
        msgspec.structs.replace(created, metadata=msgspec.structs.replace(created.metadata, annotations=annotations))
    )
    (left,) = await take(events, 1)
    assert (left.op, left.name, left.obj) == (WatchOp.DELETE, "p1", None)
    await store.delete(Pod, "ns1", "p1", grace=False)
    (gone,) = await take(events, 1)
    assert (gone.op, gone.name) == (WatchOp.DELETE, "p1")
    await events.aclose()


async def test_racing_deletes_one_wins_the_others_conflict_or_find_nothing(store: ObjectStore) -> None:
    created = await store.create(queue("q1"))
    results = await asyncio.gather(
        *(store.delete(Queue, None, "q1", resource_version=created.metadata.resource_version) for _ in range(5)),
        return_exceptions=True,
    )
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, Conflict | NotFound) for r in results if r is not None)


async def test_new_pods_start_pending(store: ObjectStore) -> None:
    created = await store.create(pod("fresh"))
    assert created.status is not None and created.status.phase == "Pending"


async def test_unconditional_delete_wins_over_concurrent_updates(store: ObjectStore) -> None:
    created = await store.create(queue("busy"))

    async def churn() -> None:
        current = created
        for weight in range(2, 30):
            try:
                current = await store.update(msgspec.structs.replace(current, spec=QueueSpec(weight=weight)))
            except (Conflict, NotFound):
                return

    async with asyncio.TaskGroup() as tg:
        tg.create_task(churn())
        await asyncio.sleep(0)
        await store.delete(Queue, None, "busy")
    with pytest.raises(NotFound):
        await store.get(Queue, None, "busy")


# --- bind: fenced on the uid and on the pod being unbound, not on the caller's resourceVersion ---------


async def test_bind_sets_the_node_and_merges_the_annotations(store: ObjectStore) -> None:
    created = await store.create(pod("b1"))
    labelled = msgspec.structs.replace(created.metadata, annotations={"keep/me": "1"})
    current = await store.update(msgspec.structs.replace(created, metadata=labelled))
    await store.bind(current, "n1", annotations={"bound/by": "s1/3"})
    bound = await store.get(Pod, "ns1", "b1")
    assert bound.spec is not None and bound.spec.node_name == "n1"
    assert bound.metadata.uid == created.metadata.uid
    assert bound.metadata.annotations == {"keep/me": "1", "bound/by": "s1/3"}


async def test_bind_from_an_older_copy_keeps_what_was_written_since(store: ObjectStore) -> None:
    created = await store.create(pod("b2"))
    await store.update(
        msgspec.structs.replace(created, metadata=msgspec.structs.replace(created.metadata, labels={"x": "y"}))
    )
    await store.bind(created, "n1")
    bound = await store.get(Pod, "ns1", "b2")
    assert bound.spec is not None and bound.spec.node_name == "n1"
    assert bound.metadata.labels == {"x": "y"}


async def test_bind_refuses_a_bound_pod_whatever_the_node(store: ObjectStore) -> None:
    created = await store.create(pod("b3"))
    await store.bind(created, "n1")
    with pytest.raises(Conflict):
        await store.bind(created, "n2")  # the copy from before the bind
    bound = await store.get(Pod, "ns1", "b3")
    with pytest.raises(Conflict):
        await store.bind(bound, "n1")
    assert (await store.get(Pod, "ns1", "b3")).spec.node_name == "n1"  # type: ignore[union-attr]


async def test_racing_binds_exactly_one_wins(store: ObjectStore) -> None:
    created = await store.create(pod("b4"))
    results = await asyncio.gather(*(store.bind(created, f"n{i}") for i in range(6)), return_exceptions=True)
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, Conflict) for r in results if r is not None)
    bound = await store.get(Pod, "ns1", "b4")
    assert bound.spec is not None and bound.spec.node_name == f"n{results.index(None)}"


async def test_bind_of_a_deleted_pod_is_not_found(store: ObjectStore) -> None:
    created = await store.create(pod("b5"))
    await store.delete(Pod, "ns1", "b5", uid=created.metadata.uid)  # unbound: removed at once
    with pytest.raises(NotFound):
        await store.bind(created, "n1")


async def test_bind_refuses_a_pod_recreated_under_the_same_name(store: ObjectStore) -> None:
    old = await store.create(pod("b6"))
    await store.delete(Pod, "ns1", "b6", uid=old.metadata.uid)
    new = await store.create(pod("b6"))
    with pytest.raises(PreconditionFailed):
        await store.bind(old, "n1")
    current = await store.get(Pod, "ns1", "b6")
    assert current.metadata.uid == new.metadata.uid
    assert current.spec is not None and current.spec.node_name is None


async def test_bind_needs_the_uid_of_the_pod(store: ObjectStore) -> None:
    created = await store.create(pod("b7"))
    anonymous = msgspec.structs.replace(created, metadata=msgspec.structs.replace(created.metadata, uid=None))
    with pytest.raises(InvalidObject) as err:
        await store.bind(anonymous, "n1")
    assert err.value.field == "metadata.uid"
    assert (await store.get(Pod, "ns1", "b7")).spec.node_name is None  # type: ignore[union-attr]


@pytest.mark.parametrize("namespace", [" ", "a b", "a.b", "*", ">"])
async def test_a_namespace_no_key_can_hold_is_refused_at_once(store: ObjectStore, namespace: str) -> None:
    """Not a wait forever (a watch on such a filter is never answered): `vcctl job list -n " "` hung."""
    with pytest.raises((InvalidObject, NotFound)):
        await asyncio.wait_for(store.list(Pod, namespace), timeout=30)

"""What the kube adapter does beyond the shared contract: status subresource, pods/binding, eviction,
and writes that never wipe fields Tephra's types do not model."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from vc_core.errors import Conflict, NotFound, PreconditionFailed
from vc_kube.client import KubeClient, resource_path
from vc_kube.store import KubeStore
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, PodStatus
from vc_proto.kinds import KINDS
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec, PodGroupStatus

pytestmark = pytest.mark.kube


def pod(name: str) -> Pod:
    spec = PodSpec(containers=[Container(name="main", image="busybox")])
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace="kt"), spec=spec)


async def test_status_and_spec_changes_both_land_through_update(kube_store: KubeStore) -> None:
    pg = await kube_store.create(
        PodGroup(
            api_version=SCHEDULING_V1BETA1,
            metadata=ObjectMeta(name="pg", namespace="kt"),
            spec=PodGroupSpec(min_member=2),
        )
    )
    changed = msgspec.structs.replace(
        pg,
        metadata=msgspec.structs.replace(pg.metadata, labels={"a": "b"}),
        status=PodGroupStatus(phase="Inqueue", running=1),
    )
    updated = await kube_store.update(changed)
    fetched = await kube_store.get(PodGroup, "kt", "pg")
    assert fetched == updated
    assert fetched.status == PodGroupStatus(phase="Inqueue", running=1)
    assert fetched.metadata.labels == {"a": "b"}
    with pytest.raises(Conflict):  # the old version again: refused
        await kube_store.update(msgspec.structs.replace(pg, status=PodGroupStatus(phase="Running")))


async def test_binding_a_pod_goes_through_pods_binding_once(kube_store: KubeStore) -> None:
    created = await kube_store.create(pod("p"))
    bound = await kube_store.update(
        msgspec.structs.replace(created, spec=msgspec.structs.replace(created.spec, node_name="n1"))
    )
    assert bound.spec is not None and bound.spec.node_name == "n1"
    # A second scheduler acting on the same old version loses.
    with pytest.raises(Conflict):
        await kube_store.update(
            msgspec.structs.replace(created, spec=msgspec.structs.replace(created.spec, node_name="n2"))
        )
    # node-sim reports it running through the status subresource.
    running = await kube_store.update(
        msgspec.structs.replace(bound, status=PodStatus(phase="Running", host_ip="10.0.0.1"))
    )
    assert running.status is not None and running.status.phase == "Running"
    assert (await kube_store.get(Pod, "kt", "p")).spec.node_name == "n1"  # type: ignore[union-attr]


async def test_update_keeps_fields_tephra_does_not_model(kube: KubeClient, kube_store: KubeStore) -> None:
    created = await kube_store.create(pod("keep"))
    path = resource_path(KINDS["Pod"], "kt", "keep")
    raw = await kube.request("GET", path)
    assert raw["spec"]["dnsPolicy"] == "ClusterFirst"  # a server default the Pod struct may not carry
    await kube_store.update(
        msgspec.structs.replace(created, metadata=msgspec.structs.replace(created.metadata, labels={"x": "y"}))
    )
    raw = await kube.request("GET", path)
    assert raw["metadata"]["labels"] == {"x": "y"} and raw["spec"]["dnsPolicy"] == "ClusterFirst"


async def test_eviction_removes_an_unscheduled_pod_and_reports_a_missing_one(kube_store: KubeStore) -> None:
    created = await kube_store.create(pod("ev"))
    await kube_store.evict("kt", "ev", uid=created.metadata.uid)
    with pytest.raises(NotFound):
        await kube_store.get(Pod, "kt", "ev")
    with pytest.raises(NotFound):
        await kube_store.evict("kt", "ev")


async def test_status_given_on_create_is_kept_like_the_nats_backend(kube_store: KubeStore) -> None:
    from vc_proto.scheduling import Queue, QueueSpec, QueueStatus

    created = await kube_store.create(
        Queue(
            api_version=SCHEDULING_V1BETA1,
            metadata=ObjectMeta(name="open-q"),
            spec=QueueSpec(weight=1),
            status=QueueStatus(state="Open"),
        )
    )
    assert created.status is not None and created.status.state == "Open"
    assert await kube_store.get(Queue, None, "open-q") == created


def recorded_requests(kube: KubeClient) -> list[tuple[str, str]]:
    """Every request this client sends from now on, as (method, path); they still go to the apiserver."""
    calls: list[tuple[str, str]] = []
    send = kube.request_bytes  # every request goes through it (`request` decodes its answer)

    async def request_bytes(method: str, path: str, **kw: object) -> bytes:
        calls.append((method, path))
        return await send(method, path, **kw)  # type: ignore[arg-type]

    kube.request_bytes = request_bytes  # type: ignore[method-assign]
    return calls


async def test_an_update_of_a_version_the_mirror_delivered_is_one_patch(kube: KubeClient) -> None:
    created = await KubeStore(kube).create(pod("seen"))
    # A service's store: it never read the pod itself, its watch (the NATS mirror) delivered it.
    store = KubeStore(kube)
    store.remember(created)
    calls = recorded_requests(kube)
    labelled = msgspec.structs.replace(created, metadata=msgspec.structs.replace(created.metadata, labels={"a": "b"}))
    updated = await store.update(labelled)
    assert calls == [("PATCH", resource_path(KINDS["Pod"], "kt", "seen"))]
    assert updated.metadata.labels == {"a": "b"}
    # The same old version again: the store knows a newer one, so it refuses without a request.
    with pytest.raises(Conflict):
        await store.update(msgspec.structs.replace(created, status=PodStatus(phase="Running")))
    assert len(calls) == 1
    # A store that knows only the old version sends the patch: the apiserver's precondition refuses it.
    unaware = KubeStore(kube)
    unaware.remember(created)
    with pytest.raises(Conflict):
        await unaware.update(msgspec.structs.replace(created, status=PodStatus(phase="Running")))
    assert [method for method, _ in calls] == ["PATCH", "PATCH"]


async def test_a_version_older_than_the_one_known_is_not_remembered(kube: KubeClient) -> None:
    store = KubeStore(kube)
    created = await store.create(pod("older"))
    labelled = msgspec.structs.replace(created, metadata=msgspec.structs.replace(created.metadata, labels={"a": "b"}))
    newer = await store.update(labelled)
    store.remember(created)  # a lagging watch delivers the create after the store wrote the label
    calls = recorded_requests(kube)
    relabelled = msgspec.structs.replace(newer, metadata=msgspec.structs.replace(newer.metadata, labels={"a": "c"}))
    await store.update(relabelled)
    assert [method for method, _ in calls] == ["PATCH"]  # the diff base is still the newer version


async def test_bind_is_one_request_that_also_writes_the_annotations(kube: KubeClient) -> None:
    created = await KubeStore(kube).create(pod("one"))
    store = KubeStore(kube)
    calls = recorded_requests(kube)
    await store.bind(created, "n1", annotations={"scheduling.tephra.dev/bound-by": "s/1"})
    assert calls == [("POST", resource_path(KINDS["Pod"], "kt", "one", "binding"))]
    bound = await store.get(Pod, "kt", "one")
    assert bound.spec is not None and bound.spec.node_name == "n1"
    assert (bound.metadata.annotations or {})["scheduling.tephra.dev/bound-by"] == "s/1"


async def test_bind_refuses_a_pod_being_deleted(kube: KubeClient, kube_store: KubeStore) -> None:
    # A finalizer keeps an unscheduled pod in deletion (without one it is removed at once).
    held = pod("held")
    meta = msgspec.structs.replace(held.metadata, finalizers=["tephra.dev/test"])
    created = await kube_store.create(msgspec.structs.replace(held, metadata=meta))
    await KubeStore(kube).delete(Pod, "kt", "held")
    with pytest.raises(Conflict):
        await KubeStore(kube).bind(created, "n1")  # refused by the apiserver itself
    assert (await kube_store.get(Pod, "kt", "held")).spec.node_name is None  # type: ignore[union-attr]


async def test_bind_refuses_a_recreated_pod_the_mirror_has_shown_without_a_request(kube: KubeClient) -> None:
    writer = KubeStore(kube)
    old = await writer.create(pod("again"))
    await writer.delete(Pod, "kt", "again", uid=old.metadata.uid)
    new = await writer.create(pod("again"))
    store = KubeStore(kube)
    store.remember(new)  # what the service's watch delivered
    calls = recorded_requests(kube)
    with pytest.raises(PreconditionFailed):
        await store.bind(old, "n1")
    assert calls == []


async def test_creates_in_a_new_namespace_at_once_share_one_namespace_request(kube: KubeClient) -> None:
    store = KubeStore(kube)
    calls = recorded_requests(kube)
    gang = [
        msgspec.structs.replace(pod(name), metadata=ObjectMeta(name=name, namespace="fresh")) for name in "abcdefghij"
    ]
    await asyncio.gather(*(store.create(p) for p in gang))
    assert [path for method, path in calls if path == "/api/v1/namespaces"] == ["/api/v1/namespaces"]
    assert len((await store.list(Pod, "fresh"))[0]) == 10

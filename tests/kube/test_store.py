"""What the kube adapter does beyond the shared contract: status subresource, pods/binding, eviction,
and writes that never wipe fields Tephra's types do not model."""

from __future__ import annotations

import msgspec
import pytest

from vc_core.errors import Conflict, NotFound
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

"""Dependents and their controller owners, as gc judges orphans."""

from __future__ import annotations

from vc_gc.logic.owners import delete_gracefully, is_orphan, owner_key
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.core import CORE_V1, ConfigMap, Pod, PodStatus
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup


def ref(kind: str, api_version: str, uid: str = "u1", controller: bool | None = True) -> OwnerReference:
    return OwnerReference(api_version=api_version, kind=kind, name="owner", uid=uid, controller=controller)


def pod(owners: list[OwnerReference] | None, phase: str | None = None) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name="p", namespace="ns", uid="pu", owner_references=owners),
        status=PodStatus(phase=phase),
    )


def job(uid: str) -> Job:
    return Job(api_version=BATCH_V1ALPHA1, metadata=ObjectMeta(name="owner", namespace="ns", uid=uid))


def test_owner_key_only_for_controller_refs_of_stored_kinds() -> None:
    assert owner_key(pod([ref("Job", BATCH_V1ALPHA1)])) == ("Job", "ns", "owner")
    assert owner_key(pod([ref("Job", BATCH_V1ALPHA1, controller=None)])) is None
    assert owner_key(pod([ref("ReplicaSet", "apps/v1")])) is None  # not stored: its absence proves nothing
    assert owner_key(pod([ref("Job", "batch/v1")])) is None  # Kubernetes' Job, not Volcano's
    assert owner_key(pod(None)) is None
    pg = PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name="g", namespace="ns", owner_references=[ref("Pod", CORE_V1)]),
    )
    assert owner_key(pg) == ("Pod", "ns", "owner")


def test_orphan_when_owner_gone_or_replaced() -> None:
    child = pod([ref("Job", BATCH_V1ALPHA1, uid="u1")])
    assert is_orphan(child, None)
    assert is_orphan(child, job("u2"))
    assert not is_orphan(child, job("u1"))
    assert not is_orphan(pod(None), None)


def test_finished_pods_go_at_once_live_ones_gracefully() -> None:
    assert not delete_gracefully(pod(None, "Succeeded"))
    assert not delete_gracefully(pod(None, "Failed"))
    assert delete_gracefully(pod(None, "Running"))
    assert delete_gracefully(ConfigMap(api_version=CORE_V1, metadata=ObjectMeta(name="c", namespace="ns")))

"""predicates' volume check (plugins/volume_binding.py): what a claim-less pod pays (nothing), how
claims split equivalence classes, and the switch predicate.VolumeBindingEnable."""

from __future__ import annotations

from typing import Any

from tests.unit.scheduler.scheduler_builders import node, pod, podgroup, real_session, snapshot
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.plugins.predicates import PredicatesPlugin
from vc_sched_core.plugins.volume_binding import NODE_CONFLICT_REASON, claim_not_found


def with_claim(obj: dict[str, Any], claim: str, namespace: str = "default") -> dict[str, Any]:
    volumes = [{"name": claim, "persistentVolumeClaim": {"claimName": claim}}]
    meta = {**obj["metadata"], "namespace": namespace}
    return {**obj, "metadata": meta, "spec": {**obj["spec"], "volumes": volumes}}


def claim(name: str, namespace: str, volume: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": {"volumeName": volume}}


def volume(name: str, node_name: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}
    spec = {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def labelled(name: str) -> dict[str, Any]:
    obj = node(name)
    return {**obj, "metadata": {**obj["metadata"], "labels": {"kubernetes.io/hostname": name}}}


def test_a_pod_without_claims_builds_no_volume_index_and_keeps_its_class() -> None:
    objs = [labelled("n1"), labelled("n2"), podgroup("j"), pod("j-0", "j"), pod("j-1", "j")]
    ssn = real_session(snapshot(*objs), load_scheduler_conf())
    plugin = PredicatesPlugin()
    plugin.on_session_open(ssn)
    first, second = ssn.jobs["default/j"].tasks.values()
    assert first.pod.claims == () and first.class_key == second.class_key
    assert plugin.static_verdict(first).all_pass and plugin.volumes is None


def test_claims_of_one_name_in_two_namespaces_are_two_classes_with_their_own_nodes() -> None:
    a = with_claim(pod("t-0", "t"), "data", "team-a")
    b = with_claim(pod("t-0", "t"), "data", "team-b")
    groups = [{**podgroup("t"), "metadata": {"name": "t", "namespace": ns}} for ns in ("team-a", "team-b")]
    objs = [labelled("n1"), labelled("n2"), *groups, a, b]
    objs += [claim("data", "team-a", "v1"), claim("data", "team-b", "v2"), volume("v1", "n1"), volume("v2", "n2")]
    ssn = real_session(snapshot(*objs), load_scheduler_conf())
    plugin = PredicatesPlugin()
    plugin.on_session_open(ssn)
    (task_a,) = ssn.jobs["team-a/t"].tasks.values()
    (task_b,) = ssn.jobs["team-b/t"].tasks.values()
    assert task_a.class_key != task_b.class_key
    verdict_a, verdict_b = plugin.static_verdict(task_a), plugin.static_verdict(task_b)
    conflict = verdict_a.reasons.index(NODE_CONFLICT_REASON)
    assert list(verdict_a.codes) == [0, conflict]
    assert list(verdict_b.codes) == [verdict_b.reasons.index(NODE_CONFLICT_REASON), 0]


def test_volume_binding_disabled_leaves_claims_unchecked() -> None:
    objs = [labelled("n1"), podgroup("j"), with_claim(pod("j-0", "j"), "nowhere")]
    ssn = real_session(snapshot(*objs), load_scheduler_conf())
    (task,) = ssn.jobs["default/j"].tasks.values()
    checked = PredicatesPlugin()
    checked.on_session_open(ssn)
    verdict = checked.static_verdict(task)
    assert list(verdict.codes) == [verdict.reasons.index(claim_not_found("nowhere"))]
    off = PredicatesPlugin({"predicate.VolumeBindingEnable": False})
    off.on_session_open(ssn)
    assert off.static_verdict(task).all_pass

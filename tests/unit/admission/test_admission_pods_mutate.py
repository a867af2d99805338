"""Pod defaulting, ported from Volcano's `pods/mutate/mutate_pod_test.go` (TestMutatePods) plus the
opt-in queue-allocation scheduling gate."""

from __future__ import annotations

from typing import Any

import pytest
from msgspec.structs import replace

from vc_proto.core import CORE_V1, Container, Pod, PodSpec, Toleration
from vc_proto.meta import ObjectMeta
from vc_validation import ResourceGroup, StaticContext, json_patch, mutate_pod, review

AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
            ]
        }
    }
}
GROUPS = (
    ResourceGroup(
        name="management",
        match="namespace",
        namespaces=("mng-ns-1", "mng-ns-2"),
        scheduler_name="default-scheduler",
        tolerations=(Toleration(key="mng-taint-1", operator="Exists", effect="NoSchedule"),),
        affinity=AFFINITY,
        labels={"volcano.sh/nodetype": "management"},
    ),
    ResourceGroup(
        name="cpu",
        match="annotation",
        annotations={"volcano.sh/resource-group": "cpu"},
        scheduler_name="volcano",
        labels={"volcano.sh/nodetype": "cpu"},
    ),
    ResourceGroup(name="gpu", scheduler_name="volcano", labels={"volcano.sh/nodetype": "gpu"}),
)
GATE = "scheduling.volcano.sh/queue-allocation-gate"


def bare_pod(name: str, *, namespace: str | None = None, annotations: dict[str, str] | None = None, **spec: Any) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace=namespace, annotations=annotations),
        spec=PodSpec(**spec),
    )


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            bare_pod("mng-pod", namespace="mng-ns-1", scheduler_name="default-scheduler"),
            [
                {"op": "add", "path": "/spec/nodeSelector", "value": {"volcano.sh/nodetype": "management"}},
                {"op": "add", "path": "/spec/affinity", "value": AFFINITY},
                {
                    "op": "add",
                    "path": "/spec/tolerations",
                    "value": [{"key": "mng-taint-1", "operator": "Exists", "effect": "NoSchedule"}],
                },
            ],
            id="namespace-group",
        ),
        pytest.param(
            bare_pod("cpu-pod", annotations={"volcano.sh/resource-group": "cpu"}),
            [
                {"op": "add", "path": "/spec/nodeSelector", "value": {"volcano.sh/nodetype": "cpu"}},
                {"op": "add", "path": "/spec/schedulerName", "value": "volcano"},
            ],
            id="annotation-group",
        ),
        pytest.param(
            bare_pod("gpu-pod", annotations={"volcano.sh/resource-group": "gpu"}),
            [
                {"op": "add", "path": "/spec/nodeSelector", "value": {"volcano.sh/nodetype": "gpu"}},
                {"op": "add", "path": "/spec/schedulerName", "value": "volcano"},
            ],
            id="default-annotation-group",
        ),
        pytest.param(bare_pod("normal-pod"), [], id="no-group"),
        pytest.param(
            bare_pod("mng-pod", namespace="mng-ns-2", node_selector={"zone": "a"}, affinity={"podAffinity": {}}),
            [
                {"op": "add", "path": "/spec/nodeSelector/volcano.sh~1nodetype", "value": "management"},
                {
                    "op": "add",
                    "path": "/spec/tolerations",
                    "value": [{"key": "mng-taint-1", "operator": "Exists", "effect": "NoSchedule"}],
                },
                {"op": "add", "path": "/spec/schedulerName", "value": "default-scheduler"},
            ],
            id="labels-merged-existing-affinity-kept",
        ),
    ],
)
def test_resource_groups(pod: Pod, expected: list[dict[str, Any]]) -> None:
    mutated = mutate_pod(pod, resource_groups=GROUPS)
    # Operations touch distinct paths, so their order does not matter.
    assert sorted(json_patch(pod, mutated), key=lambda op: op["path"]) == sorted(expected, key=lambda op: op["path"])


@pytest.mark.parametrize(
    ("annotations", "gates", "expected_gates"),
    [
        pytest.param({GATE: "true"}, None, [{"name": GATE}], id="opt-in-adds-gate"),
        pytest.param({GATE: "true"}, [{"name": "other"}], [{"name": "other"}, {"name": GATE}], id="appends-to-gates"),
        pytest.param({GATE: "true"}, [{"name": GATE}], [{"name": GATE}], id="idempotent"),
        pytest.param({GATE: "false"}, None, None, id="opt-out"),
        pytest.param(None, None, None, id="no-annotation"),
    ],
)
def test_queue_allocation_gate(
    annotations: dict[str, str] | None, gates: list[dict[str, Any]] | None, expected_gates: list[dict[str, Any]] | None
) -> None:
    pod = bare_pod("p", annotations=annotations, scheduling_gates=gates)
    mutated = mutate_pod(pod, queue_gate=True)
    assert mutated.spec is not None and mutated.spec.scheduling_gates == expected_gates


def test_gate_off_by_default() -> None:
    pod = bare_pod("p", annotations={GATE: "true"})
    assert mutate_pod(pod) is pod


def test_review_mutates_then_validates_the_result() -> None:
    # The group hands the pod to volcano, so the budget annotations are then checked.
    ctx = StaticContext(resource_groups=GROUPS)
    annotations = {"volcano.sh/resource-group": "cpu", "volcano.sh/jdb-min-available": "0"}
    pod = bare_pod("cpu-pod", annotations=annotations, containers=[Container(name="main")])
    verdict = review("CREATE", pod, None, ctx)
    assert not verdict.allowed
    assert verdict.violations[0].rule == "jdb-annotation"
    fine = replace(pod, metadata=replace(pod.metadata, annotations={"volcano.sh/resource-group": "cpu"}))
    allowed = review("CREATE", fine, None, ctx)
    assert allowed.allowed and isinstance(allowed.patched, Pod)
    assert allowed.patched.spec is not None and allowed.patched.spec.scheduler_name == "volcano"

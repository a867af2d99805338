"""Snapshot loader: Kubernetes-shaped objects in, errors naming the document index and field."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vc_sched_core.snapshot import SnapshotError, load_objects, load_snapshot


@pytest.mark.parametrize(
    ("text", "index", "field"),
    [
        pytest.param(
            "kind: Node\nmetadata: {name: a}\n---\nkind: PodGroup\nmetadata: {name: b}\nspec: {minMember: lots}\n",
            1,
            "spec.minMember",
            id="wrong-type",
        ),
        pytest.param(
            "kind: Node\nmetadata: {name: a}\nstatus: {allocatable: {cpu: 2x}}\n",
            0,
            "status.allocatable.cpu",
            id="bad-quantity",
        ),
        pytest.param("kind: Queue\nmetadata: {name: q}\nspec: {weight: 0}\n", 0, "spec.weight", id="weight-below-one"),
        pytest.param("kind: Pod\nmetadata: {namespace: x}\n", 0, "metadata.name", id="missing-name"),
        pytest.param(
            "---\nkind: Node\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: p}\n"
            "spec: {containers: [{resources: {requests: {memory: 1Qi}}}]}\n",
            1,
            "spec.containers[0].resources.requests.memory",
            id="container-request",
        ),
        pytest.param(
            "kind: Node\nmetadata: {name: a}\n---\n- just\n- a list\n---\nkind: Node\n",
            1,
            "(document)",
            id="not-an-object",
        ),
        pytest.param(
            "kind: Node\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: [unclosed\n",
            1,
            "(document)",
            id="yaml-syntax",
        ),
    ],
)
def test_malformed_document_names_index_and_field(text: str, index: int, field: str) -> None:
    with pytest.raises(SnapshotError) as caught:
        load_snapshot(text)
    assert caught.value.index == index
    assert caught.value.field == field
    assert f"document {index}" in str(caught.value)


def test_unknown_kinds_and_fields_are_ignored_and_lists_expand() -> None:
    snap = load_objects(
        [
            {"kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}},
            {
                "kind": "List",
                "items": [
                    {
                        "kind": "Node",
                        "metadata": {"name": "n", "extra": 1},
                        "status": {"allocatable": {"cpu": "500m", "pods": "10"}},
                    }
                ],
            },
        ]
    )
    assert [n.name for n in snap.nodes] == ["n"]
    assert snap.nodes[0].allocatable == {"cpu": Fraction(1, 2)}
    assert snap.nodes[0].max_pods == 10


def test_pod_request_defaults_to_limits_and_takes_the_largest_init_container() -> None:
    snap = load_objects(
        [
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [
                        {"resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "2"}, "requests": {"cpu": "1"}}},
                        {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                    ],
                    "initContainers": [{"resources": {"requests": {"cpu": "3"}}}],
                },
            }
        ]
    )
    pod = snap.pods[0]
    assert pod.requests == {"cpu": Fraction(3), "memory": Fraction(2**30), "nvidia.com/gpu": Fraction(1)}
    assert pod.namespace == "default" and pod.phase == "Pending"


def test_pods_asking_alike_share_their_requests_and_a_bad_quantity_is_refused_every_time() -> None:
    """One container's requests are parsed once per distinct resources and the pods that ask alike
    share that dict (read only, as every view's fields are); a bad quantity is never remembered."""
    spec = {"containers": [{"resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}}]}
    pods = [{"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns"}, "spec": spec} for i in range(2)]
    first, second = load_objects(pods).pods
    assert first.requests == second.requests == {"cpu": Fraction(1, 2), "memory": Fraction(2**30)}
    assert first.requests is second.requests
    bad = {
        "kind": "Pod",
        "metadata": {"name": "b"},
        "spec": {"containers": [{"resources": {"requests": {"cpu": "x"}}}]},
    }
    for _ in range(2):
        with pytest.raises(SnapshotError, match="cpu"):
            load_objects([bad])

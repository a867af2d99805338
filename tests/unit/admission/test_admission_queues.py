"""Queue CREATE/UPDATE/DELETE, ported from Volcano's `queues/validate/validate_queue_test.go`
(TestAdmitQueues, TestAdmitHierarchicalQueues, TestValidateQueueDepthDynamic,
TestValidateChildAgainstAncestorForCapability, TestValidateChildrenConstraintsForCapability) and
`queues/mutate/mutate_queue_test.go`."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from msgspec.structs import replace

from tests.unit.admission.admission_builders import context, only, queue
from vc_proto.base import ResourceList
from vc_proto.scheduling import Queue, QueueStatus
from vc_validation import StaticContext, mutate_queue, review

H, HW = "volcano.sh/hierarchy", "volcano.sh/hierarchy-weights"


class Expect(NamedTuple):
    field: str
    rule: str
    message: str


def with_allocated(q: Queue, pods: str) -> Queue:
    return replace(q, status=QueueStatus(state="Open", allocated={"pods": pods}))


# The tree TestAdmitHierarchicalQueues builds in its fake informer.
HIERARCHY = (
    with_allocated(queue("queue-with-jobs"), "1"),
    with_allocated(queue("queue-without-jobs"), "0"),
    queue("queue-with-child-queues"),
    queue("child-queue", parent="queue-with-child-queues"),
    queue("queue-without-child-queues"),
    with_allocated(queue("parent-queue-has-child-with-jobs"), "1"),
    with_allocated(queue("child-queue-a-with-jobs", parent="parent-queue-has-child-with-jobs"), "1"),
    queue(
        "parent-queue-resource-test",
        capability={"cpu": "10"},
        guarantee={"cpu": "8", "memory": "16Gi"},
        deserved={"cpu": "8", "memory": "16Gi"},
    ),
    queue(
        "sibling-queue-resource-test",
        parent="parent-queue-resource-test",
        guarantee={"cpu": "5", "memory": "10Gi"},
        deserved={"cpu": "5", "memory": "10Gi"},
    ),
    queue(
        "parent-queue-to-update",
        capability={"cpu": "20"},
        guarantee={"cpu": "15", "memory": "30Gi"},
        deserved={"cpu": "15", "memory": "30Gi"},
    ),
    queue(
        "child-queue-a",
        parent="parent-queue-to-update",
        capability={"cpu": "12"},
        guarantee={"cpu": "8", "memory": "16Gi"},
        deserved={"cpu": "8", "memory": "16Gi"},
    ),
    queue(
        "child-queue-b-for-update",
        parent="parent-queue-to-update",
        capability={"cpu": "8"},
        guarantee={"cpu": "5", "memory": "10Gi"},
        deserved={"cpu": "5", "memory": "10Gi"},
    ),
    queue("parent-queue-empty-parent", capability={"cpu": "100"}),
    queue("child-of-empty-parent", parent="parent-queue-empty-parent", capability={"cpu": "50"}),
    queue("sci", annotations={H: "root/sci", HW: "1/2"}),
    queue("sci-dev", annotations={H: "root/sci/dev", HW: "1/2/3"}),
)
CTX = context(*HIERARCHY, queue("busy-queue"), busy={"busy-queue"})


def stored(name: str) -> Queue:
    return CTX.queues[name]


CREATE_CASES = [
    # ---- TestAdmitQueues ----
    pytest.param(queue("normal-case-not-set", state=None), None, id="state-not-set"),
    pytest.param(queue("normal-case-set-open", state="Open"), None, id="state-open"),
    pytest.param(queue("normal-case-set-closed", state="Closed"), None, id="state-closed"),
    pytest.param(
        queue("abnormal-case", state="wrong"),
        Expect("status.state", "queue-state", "queue state must be in [Open Closed]"),
        id="state-wrong",
    ),
    pytest.param(queue("no-resources"), None, id="create-without-resources"),
    pytest.param(queue("only-deserved", deserved={"cpu": "1", "memory": "1Gi"}), None, id="create-with-deserved"),
    pytest.param(
        queue("only-guarantee", guarantee={"cpu": "1"}),
        Expect("spec.deserved.cpu", "queue-deserved-guarantee", "deserved[cpu] must be >= guarantee[cpu]=1"),
        id="guarantee-without-deserved",
    ),
    pytest.param(
        queue("capability-less-deserved", capability={"cpu": "1"}, deserved={"cpu": "2"}),
        Expect("spec.deserved.cpu", "queue-deserved-capability", "deserved[cpu]=2 must be <= capability[cpu]=1"),
        id="capability-less-than-deserved",
    ),
    pytest.param(
        queue("deserved-less-guarantee", deserved={"memory": "1Gi"}, guarantee={"memory": "3Gi"}),
        Expect(
            "spec.deserved.memory", "queue-deserved-guarantee", "deserved[memory]=1Gi must be >= guarantee[memory]=3Gi"
        ),
        id="deserved-less-than-guarantee",
    ),
    pytest.param(
        queue("weights-mismatch", annotations={H: "root/a", HW: "1/2/3"}),
        Expect(
            "metadata.annotations",
            "queue-hierarchy",
            "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights",
        ),
        id="hierarchy-and-weights-lengths-differ",
    ),
    pytest.param(
        queue("weights-negative", annotations={H: "root/a", HW: "1/-1"}),
        Expect("metadata.annotations", "queue-hierarchy-weights", "-1 in the 1/-1 must be larger than 0"),
        id="hierarchy-weight-negative",
    ),
    pytest.param(
        queue("weights-illegal", annotations={H: "root/a", HW: "1/a"}),
        Expect("metadata.annotations", "queue-hierarchy-weights", "a in the 1/a is invalid number"),
        id="hierarchy-weight-not-a-number",
    ),
    pytest.param(
        queue("in-sub-path", annotations={H: "root/sci", HW: "1/2"}),
        Expect(
            "metadata.annotations",
            "queue-hierarchy",
            "root/sci is not allowed to be in the sub path of root/sci/dev of queue sci-dev",
        ),
        id="hierarchy-in-sub-path-of-another-queue",
    ),
    pytest.param(
        queue("substring", annotations={H: "root/sc", HW: "1/2"}), None, id="hierarchy-substring-of-another-queue"
    ),
    pytest.param(queue("rooted-later", annotations={H: "sci2", HW: "2"}), None, id="hierarchy-gets-rooted"),
    # ---- TestAdmitHierarchicalQueues ----
    pytest.param(
        queue("self-referencing-queue", parent="self-referencing-queue"),
        Expect("spec.parent", "queue-parent-self", "queue self-referencing-queue cannot use itself as parent"),
        id="parent-is-itself",
    ),
    pytest.param(
        queue("parent-queue-with-jobs", parent="queue-with-jobs"),
        Expect(
            "spec.parent",
            "queue-parent-has-workloads",
            "queue queue-with-jobs cannot be the parent queue of queue parent-queue-with-jobs "
            "because it has allocated Pods: 1",
        ),
        id="parent-has-allocated-pods",
    ),
    pytest.param(queue("parent-queue-without-jobs", parent="queue-without-jobs"), None, id="parent-without-pods"),
    pytest.param(
        queue("child-queue-b", parent="parent-queue-has-child-with-jobs"), None, id="parent-whose-child-has-pods"
    ),
    pytest.param(
        queue("under-busy", parent="busy-queue"),
        Expect(
            "spec.parent",
            "queue-parent-has-workloads",
            "queue busy-queue cannot be the parent queue of queue under-busy because it has jobs or podgroups",
        ),
        id="parent-has-jobs-or-podgroups",
    ),
    pytest.param(
        queue("orphan", parent="nowhere"),
        Expect("spec.parent", "queue-parent-exists", "failed to get parent queue of queue orphan"),
        id="parent-missing",
    ),
    pytest.param(
        queue("child-capability-exceeds-parent", parent="parent-queue-resource-test", capability={"cpu": "20"}),
        Expect(
            "spec.capability.cpu",
            "queue-capability-ancestor",
            "queue child-capability-exceeds-parent capability[cpu]=20 exceeds its ancestor's capability=10",
        ),
        id="child-capability-exceeds-parent",
    ),
    pytest.param(
        queue(
            "siblings-guarantee-exceeds",
            parent="parent-queue-resource-test",
            guarantee={"cpu": "4", "memory": "9Gi"},
            deserved={"cpu": "4", "memory": "9Gi"},
        ),
        Expect(
            "spec.guarantee.resource",
            "queue-children-guarantee",
            "parent queue parent-queue-resource-test validation failed: "
            "sum of children's guarantee (cpu 9, memory 19Gi) "
            "exceeds parent's guarantee limit (cpu 8, memory 16Gi)",
        ),
        id="siblings-guarantee-exceed-parent",
    ),
    pytest.param(
        queue("sibling-fits", parent="parent-queue-resource-test", guarantee={"cpu": "3"}, deserved={"cpu": "3"}),
        None,
        id="siblings-guarantee-fit-parent",
    ),
    pytest.param(
        queue("queue-negative-capability", capability={"cpu": "-10"}),
        Expect(
            "spec.capability.cpu", "quantity-non-negative", 'Invalid value: "-10": must be greater than or equal to 0'
        ),
        id="negative-capability",
    ),
    pytest.param(
        queue("queue-negative-deserved", deserved={"cpu": "-5"}),
        Expect("spec.deserved.cpu", "quantity-non-negative", "must be greater than or equal to 0"),
        id="negative-deserved",
    ),
    pytest.param(
        queue("queue-negative-guarantee", guarantee={"cpu": "-2"}),
        Expect("spec.guarantee.resource.cpu", "quantity-non-negative", "must be greater than or equal to 0"),
        id="negative-guarantee",
    ),
    pytest.param(
        queue("bad-quantity", capability={"cpu": "lots"}),
        Expect("spec.capability.cpu", "quantity", "is not a quantity"),
        id="unparsable-capability",
    ),
    # ---- Tephra's own bounds ----
    pytest.param(
        queue("heavy", weight=70_000),
        Expect("spec.weight", "queue-weight", "queue weight must be between 1 and 65535"),
        id="weight-over-max",
    ),
    pytest.param(
        queue("Bad_Queue"), Expect("metadata.name", "queue-name", "RFC 1123 subdomain"), id="queue-name-invalid"
    ),
    pytest.param(
        queue("q" * 64),
        Expect("metadata.name", "queue-name", "must be no more than 63 characters"),
        id="queue-name-too-long",
    ),
    pytest.param(
        queue("tenants", allowed=["team-a", "Team_B"]),
        Expect("spec.allowedNamespaces[1]", "allowed-namespace-name", "RFC 1123 label"),
        id="allowed-namespace-invalid",
    ),
    pytest.param(queue("tenants-ok", allowed=["team-a", "*"]), None, id="allowed-namespaces-valid"),
]


@pytest.mark.parametrize(("submitted", "expected"), CREATE_CASES)
def test_queue_create(submitted: Queue, expected: Expect | None) -> None:
    verdict = review("CREATE", submitted, None, CTX)
    assert_verdict(verdict, expected)


def assert_verdict(verdict: Any, expected: Expect | None) -> None:
    if expected is None:
        assert verdict.allowed, verdict.violations
        return
    assert not verdict.allowed
    found = only(verdict, expected.rule)
    assert found.field == expected.field
    assert expected.message in found.message


UPDATE_CASES = [
    pytest.param(
        queue("open-to-closed", state="Open"), queue("open-to-closed", state="Closed"), None, id="open-to-closed"
    ),
    pytest.param(
        queue("closed-to-open", state="Closed"), queue("closed-to-open", state="Open"), None, id="closed-to-open"
    ),
    pytest.param(
        queue("open-to-wrong", state="Open"),
        queue("open-to-wrong", state="Wrong"),
        Expect("status.state", "queue-state", "queue state must be in [Open Closed]"),
        id="open-to-wrong-state",
    ),
    pytest.param(
        stored("parent-queue-to-update"),
        queue("parent-queue-to-update", capability={"cpu": "10"}),
        Expect(
            "spec.capability.cpu",
            "queue-capability-descendants",
            "queue parent-queue-to-update capability[cpu]=10 is smaller than its descendants' max capability=12",
        ),
        id="parent-capability-below-child-capability",
    ),
    pytest.param(
        stored("parent-queue-to-update"),
        queue(
            "parent-queue-to-update",
            capability={"cpu": "20"},
            guarantee={"cpu": "10", "memory": "20Gi"},
            deserved={"cpu": "15", "memory": "30Gi"},
        ),
        Expect(
            "spec.guarantee.resource",
            "queue-children-guarantee",
            "queue parent-queue-to-update validation failed: sum of children's guarantee (cpu 13, memory 26Gi) "
            "exceeds parent's guarantee limit (cpu 10, memory 20Gi)",
        ),
        id="children-guarantee-exceed-parent",
    ),
    pytest.param(
        stored("parent-queue-empty-parent"),
        queue("parent-queue-empty-parent", capability={"cpu": "30"}),
        Expect(
            "spec.capability.cpu",
            "queue-capability-descendants",
            "queue parent-queue-empty-parent capability[cpu]=30 is smaller than its descendants' max capability=50",
        ),
        id="top-level-parent-validates-children",
    ),
    pytest.param(
        queue("root", reclaimable=False),
        queue("root", reclaimable=False, capability={"cpu": "1"}),
        Expect(
            "spec",
            "root-queue-protected",
            "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
        ),
        id="root-resources-protected",
    ),
    pytest.param(
        queue("root", reclaimable=False), queue("root", reclaimable=False, weight=3), None, id="root-weight-may-change"
    ),
    pytest.param(
        stored("queue-with-child-queues"),
        queue("queue-with-child-queues", parent="child-queue"),
        Expect("spec.parent", "queue-parent-cycle", "queue queue-with-child-queues cannot be an ancestor of itself"),
        id="parent-change-makes-cycle",
    ),
    pytest.param(
        stored("child-queue"),
        queue("child-queue", weight=0),
        Expect("spec.weight", "queue-weight", "queue weight must be between 1 and 65535, got 0"),
        id="weight-zero-on-update",
    ),
    pytest.param(
        stored("child-queue"),
        queue("child-queue", parent="queue-with-child-queues", weight=4),
        None,
        id="weight-change-unrelated-to-hierarchy",
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), UPDATE_CASES)
def test_queue_update(old: Queue, new: Queue, expected: Expect | None) -> None:
    assert_verdict(review("UPDATE", new, old, CTX), expected)


DELETE_CASES = [
    pytest.param(queue("closed-state-for-delete", state="Closed"), None, id="closed-queue-deletable"),
    pytest.param(queue("open-state-for-delete"), None, id="open-queue-deletable"),
    pytest.param(
        queue("default"),
        Expect("metadata.name", "queue-protected", "`default` queue can not be deleted"),
        id="default-protected",
    ),
    pytest.param(
        queue("root"),
        Expect("metadata.name", "queue-protected", "`root` queue can not be deleted"),
        id="root-protected",
    ),
    pytest.param(
        stored("queue-with-child-queues"),
        Expect(
            "metadata.name",
            "queue-has-children",
            "queue queue-with-child-queues can not be deleted because it has 1 child queues: child-queue",
        ),
        id="queue-with-children",
    ),
    pytest.param(
        queue("busy-queue"),
        Expect(
            "metadata.name",
            "queue-has-workloads",
            "queue busy-queue can not be deleted because it has jobs or podgroups",
        ),
        id="queue-with-jobs",
    ),
    pytest.param(stored("queue-without-child-queues"), None, id="queue-without-children"),
]


@pytest.mark.parametrize(("doomed", "expected"), DELETE_CASES)
def test_queue_delete(doomed: Queue, expected: Expect | None) -> None:
    verdict = review("DELETE", None, doomed, CTX)
    assert_verdict(verdict, expected)
    assert verdict.patched is None


def chain_context(depth: int, max_depth: int) -> StaticContext:
    """A chain level-1 <- level-2 <- ... <- level-<depth>."""
    queues = [queue("level-1")] + [queue(f"level-{i}", parent=f"level-{i - 1}") for i in range(2, depth + 1)]
    return context(*queues, max_depth=max_depth)


@pytest.mark.parametrize(
    ("max_depth", "allowed"),
    [
        pytest.param(5, True, id="depth-3-allowed-when-max-5"),
        pytest.param(3, True, id="depth-3-allowed-when-max-3"),
        pytest.param(2, False, id="depth-3-rejected-when-max-2"),
    ],
)
def test_queue_depth(max_depth: int, allowed: bool) -> None:
    verdict = review("CREATE", queue("level-3", parent="level-2"), None, chain_context(2, max_depth))
    assert verdict.allowed is allowed
    if not allowed:
        assert only(verdict, "queue-depth").message == f"queue level-3 exceeds the maximum allowed depth of {max_depth}"


ANCESTORS = (
    queue("grandparent", capability={"cpu": "20", "memory": "40Gi", "nvidia.com/gpu": "8"}),
    queue("parent", parent="grandparent", capability={"cpu": "10", "memory": "10Gi"}),
    queue("capless-parent", parent="grandparent"),
)


@pytest.mark.parametrize(
    ("parent", "capability", "resource", "message"),
    [
        pytest.param(
            "parent",
            {"cpu": "15"},
            "cpu",
            "capability[cpu]=15 exceeds its ancestor's capability=10",
            id="cpu-exceeds-direct-parent",
        ),
        pytest.param(
            "parent",
            {"memory": "20Gi"},
            "memory",
            "capability[memory]=20Gi exceeds its ancestor's capability=10Gi",
            id="memory-exceeds-nearest-ancestor",
        ),
        pytest.param(
            "parent",
            {"nvidia.com/gpu": "10"},
            "nvidia.com/gpu",
            "capability[nvidia.com/gpu]=10 exceeds its ancestor's capability=8",
            id="gpu-exceeds-grandparent",
        ),
        pytest.param(
            "parent", {"cpu": "5", "memory": "5Gi", "nvidia.com/gpu": "4"}, None, None, id="within-all-limits"
        ),
        pytest.param("parent", None, None, None, id="no-capability"),
        pytest.param(
            "capless-parent",
            {"cpu": "25"},
            "cpu",
            "capability[cpu]=25 exceeds its ancestor's capability=20",
            id="capless-parent-checks-grandparent",
        ),
        pytest.param("capless-parent", {"cpu": "15"}, None, None, id="capless-parent-within-grandparent"),
    ],
)
def test_child_capability_against_ancestors(
    parent: str, capability: ResourceList | None, resource: str | None, message: str | None
) -> None:
    verdict = review("CREATE", queue("child", parent=parent, capability=capability), None, context(*ANCESTORS))
    expected = None if message is None else Expect(f"spec.capability.{resource}", "queue-capability-ancestor", message)
    assert_verdict(verdict, expected)


@pytest.mark.parametrize(
    ("children", "capability", "message"),
    [
        pytest.param(
            (queue("c1", parent="p"), queue("g1", parent="c1", capability={"cpu": "12"})),
            {"cpu": "10"},
            "queue p capability[cpu]=10 is smaller than its descendants' max capability=12",
            id="grandchild-exceeds-via-subtree",
        ),
        pytest.param(
            (queue("c1", parent="p", capability={"cpu": "8"}),), {"cpu": "10"}, None, id="children-within-parent"
        ),
        pytest.param((queue("c1", parent="p", capability={"cpu": "80"}),), None, None, id="parent-without-capability"),
        pytest.param((), {"cpu": "10"}, None, id="parent-without-children"),
        pytest.param(
            (queue("c1", parent="p", capability={"nvidia.com/gpu": "2"}),),
            {"nvidia.com/gpu": "4"},
            None,
            id="gpu-within-parent",
        ),
        pytest.param(
            (queue("c1", parent="p"), queue("g1", parent="c1", capability={"nvidia.com/gpu": "6"})),
            {"nvidia.com/gpu": "4"},
            "queue p capability[nvidia.com/gpu]=4 is smaller than its descendants' max capability=6",
            id="gpu-exceeds-via-subtree",
        ),
    ],
)
def test_parent_capability_covers_descendants(
    children: tuple[Queue, ...], capability: ResourceList | None, message: str | None
) -> None:
    old = queue("p", capability={"cpu": "1000", "nvidia.com/gpu": "1000"})
    verdict = review("UPDATE", queue("p", capability=capability), old, context(old, *children))
    if message is None:
        assert verdict.allowed, verdict.violations
    else:
        assert only(verdict, "queue-capability-descendants").message == message


@pytest.mark.parametrize(
    ("submitted", "expected"),
    [
        pytest.param(
            queue("q", weight=None, reclaimable=None),
            {"weight": 1, "reclaimable": True},
            id="defaults-weight-and-reclaimable",
        ),
        pytest.param(
            queue("q", weight=0, reclaimable=False), {"weight": 1, "reclaimable": False}, id="zero-weight-becomes-1"
        ),
        pytest.param(
            queue("q", weight=5, reclaimable=True), {"weight": 5, "reclaimable": True}, id="explicit-values-kept"
        ),
    ],
)
def test_queue_mutation_defaults(submitted: Queue, expected: dict[str, object]) -> None:
    spec = mutate_queue(submitted).spec
    assert spec is not None
    assert {"weight": spec.weight, "reclaimable": spec.reclaimable} == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({H: "a/b", HW: "2/3"}, {H: "root/a/b", HW: "1/2/3"}, id="hierarchy-gets-root-prefix"),
        pytest.param({H: "root/a", HW: "1/2"}, {H: "root/a", HW: "1/2"}, id="rooted-hierarchy-kept"),
        pytest.param({H: "a/b"}, {H: "a/b"}, id="hierarchy-without-weights-kept"),
        pytest.param(None, None, id="no-annotations"),
    ],
)
def test_queue_mutation_hierarchy(annotations: dict[str, str] | None, expected: dict[str, str] | None) -> None:
    mutated = mutate_queue(queue("q", annotations=annotations))
    assert mutated.metadata.annotations == expected


def test_queue_mutation_is_idempotent() -> None:
    once = mutate_queue(queue("q", weight=None, reclaimable=None, annotations={H: "a", HW: "2"}))
    assert mutate_queue(once) == once


def test_unknown_operation_is_denied() -> None:
    verdict = review("CONNECT", queue("q"), None, CTX)  # type: ignore[arg-type]
    assert (
        only(verdict, "operation").message
        == "invalid operation `CONNECT`, expect operation to be `CREATE`, `UPDATE` or `DELETE`"
    )

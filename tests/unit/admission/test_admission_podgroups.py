"""PodGroup CREATE, ported from Volcano's `podgroups/{mutate,validate}/*_test.go`, plus tenancy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.admission_builders import context, only, podgroup, queue
from vc_proto.batch import NetworkTopologySpec
from vc_proto.scheduling import SubGroupPolicySpec
from vc_validation import json_patch, mutate_podgroup, review

QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
BOTH = NetworkTopologySpec(highest_tier_allowed=1, highest_tier_name="tier-1")


@pytest.mark.parametrize(
    ("submitted_queue", "namespace_annotations", "expected_queue"),
    [
        pytest.param("custom-queue", None, "custom-queue", id="non-default-queue-kept"),
        pytest.param(
            "default", {QUEUE_ANNOTATION: "ns-queue"}, "ns-queue", id="default-queue-takes-namespace-annotation"
        ),
        pytest.param("default", {}, "default", id="default-queue-without-namespace-annotation"),
        pytest.param(None, {QUEUE_ANNOTATION: "ns-queue"}, "ns-queue", id="unset-queue-takes-namespace-annotation"),
        pytest.param(None, None, "default", id="unset-queue-becomes-default"),
    ],
)
def test_podgroup_queue_default(
    submitted_queue: str | None, namespace_annotations: dict[str, str] | None, expected_queue: str
) -> None:
    ctx = context(namespaces={"test-ns": namespace_annotations} if namespace_annotations is not None else None)
    submitted = podgroup(namespace="test-ns", queue=submitted_queue)
    mutated = mutate_podgroup(submitted, ctx)
    assert mutated.spec is not None and mutated.spec.queue == expected_queue
    assert mutate_podgroup(mutated, ctx) == mutated


def test_podgroup_patch_names_the_queue() -> None:
    ctx = context(queue("ns-queue"), namespaces={"test-ns": {QUEUE_ANNOTATION: "ns-queue"}})
    submitted = podgroup(namespace="test-ns", queue="default")
    verdict = review("CREATE", submitted, None, ctx)
    assert verdict.allowed
    assert json_patch(submitted, verdict.patched) == [{"op": "replace", "path": "/spec/queue", "value": "ns-queue"}]


CASES: list[Any] = [
    pytest.param({"queue": "test-queue"}, None, id="valid-podgroup-with-open-queue"),
    pytest.param(
        {"queue": "closed-queue"},
        (
            "spec.queue",
            "queue-open",
            "can only submit PodGroup to queue with state `Open`, queue `closed-queue` status is `Closed`",
        ),
        id="podgroup-with-closed-queue",
    ),
    pytest.param({}, None, id="podgroup-with-empty-queue-goes-to-default"),
    pytest.param(
        {"queue": "missing-queue"},
        ("spec.queue", "queue-exists", 'unable to find queue: queue.scheduling.volcano.sh "missing-queue" not found'),
        id="podgroup-with-missing-queue",
    ),
    pytest.param(
        {
            "queue": "test-queue",
            "sub_group_policy": [
                SubGroupPolicySpec(name="test-policy", network_topology=NetworkTopologySpec(highest_tier_name="t"))
            ],
        },
        None,
        id="sub-group-policy-with-highest-tier-name",
    ),
    pytest.param(
        {
            "queue": "test-queue",
            "sub_group_policy": [
                SubGroupPolicySpec(name="test-policy", network_topology=NetworkTopologySpec(highest_tier_allowed=1))
            ],
        },
        None,
        id="sub-group-policy-with-highest-tier-allowed",
    ),
    pytest.param(
        {"queue": "test-queue", "sub_group_policy": [SubGroupPolicySpec(name="test-policy", network_topology=BOTH)]},
        (
            "spec.subGroupPolicy[0].networkTopology",
            "network-topology",
            "in subGroupPolicy 'test-policy': must not specify 'highestTierAllowed' and 'highestTierName'",
        ),
        id="sub-group-policy-with-both-tier-fields",
    ),
    pytest.param(
        {"queue": "test-queue", "network_topology": BOTH},
        ("spec.networkTopology", "network-topology", "must not specify 'highestTierAllowed' and 'highestTierName'"),
        id="network-topology-with-both-tier-fields",
    ),
    pytest.param(
        {"queue": "root"},
        ("spec.queue", "queue-leaf", "can not submit PodGroup to root queue"),
        id="podgroup-to-root-queue",
    ),
    pytest.param(
        {"queue": "parent-queue"},
        ("spec.queue", "queue-leaf", "can only submit PodGroup to leaf queue, queue `parent-queue` has 1 child queues"),
        id="podgroup-to-parent-queue",
    ),
    pytest.param(
        {"queue": "test-queue", "min_member": -1},
        ("spec.minMember", "min-member", "'minMember' must be between 0 and 100000"),
        id="negative-min-member",
    ),
    pytest.param(
        {"queue": "test-queue", "min_task_member": {"worker": -2}},
        ("spec.minTaskMember.worker", "min-task-member", "must be between 0"),
        id="negative-min-task-member",
    ),
    pytest.param(
        {"queue": "team-queue"},
        ("spec.queue", "queue-namespace-allowed", "namespace `default` is not allowed to submit to queue `team-queue`"),
        id="namespace-not-allowed",
    ),
]

PG_CTX = context(
    queue("test-queue"),
    queue("closed-queue", state="Closed"),
    queue("parent-queue"),
    queue("leaf-queue", parent="parent-queue"),
    queue("team-queue", allowed=["team-a"]),
)


@pytest.mark.parametrize(("spec", "expected"), CASES)
def test_podgroup_create(spec: dict[str, Any], expected: tuple[str, str, str] | None) -> None:
    verdict = review("CREATE", podgroup(**spec), None, PG_CTX)
    if expected is None:
        assert verdict.allowed, verdict.violations
        return
    field, rule, message = expected
    assert not verdict.allowed
    found = only(verdict, rule)
    assert found.field == field
    assert message in found.message


def test_queue_and_topology_failures_are_reported_together() -> None:
    verdict = review("CREATE", podgroup(queue="closed-queue", network_topology=BOTH), None, PG_CTX)
    assert {v.rule for v in verdict.violations} == {"queue-open", "network-topology"}
    assert "; " in verdict.message


@pytest.mark.parametrize("operation", ["UPDATE", "DELETE"])
def test_podgroup_only_reviewed_on_create(operation: str) -> None:
    # Volcano validates PodGroups on CREATE only: updates come from controllers and the scheduler.
    verdict = review(operation, podgroup(queue="closed-queue"), podgroup(queue="closed-queue"), PG_CTX)  # type: ignore[arg-type]
    assert verdict.allowed

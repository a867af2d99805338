"""Tenancy (Tephra, beyond Volcano): `spec.allowedNamespaces` on a queue and on its ancestors decides
which namespaces may submit Jobs and PodGroups to it."""

from __future__ import annotations

import dataclasses

import pytest
from msgspec.structs import replace

from tests.unit.admission.admission_builders import context, job, only, pod, podgroup, queue
from vc_proto.core import Pod
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION as GROUP
from vc_proto.vocabulary import QUEUE_NAME_ANNOTATION as QUEUE
from vc_validation import review
from vc_validation.tenancy import allows_namespace

TEAMS = context(
    queue("open-to-all"),
    queue("team-a-only", allowed=["team-a"]),
    queue("wildcard", allowed=["*"]),
    queue("reserved", allowed=[]),
    queue("team-parent", allowed=["team-a", "team-b"]),
    queue("team-b-leaf", parent="team-parent", allowed=["team-b", "team-c"]),
    queue("inherits", parent="team-parent"),
)


@pytest.mark.parametrize(
    ("allowed", "namespace", "expected"),
    [
        pytest.param(None, "any", True, id="absent-allows-everyone"),
        pytest.param([], "any", False, id="empty-allows-nobody"),
        pytest.param(["*"], "any", True, id="wildcard"),
        pytest.param(["a", "b"], "b", True, id="listed"),
        pytest.param(["a", "b"], "c", False, id="not-listed"),
    ],
)
def test_allows_namespace(allowed: list[str] | None, namespace: str, expected: bool) -> None:
    assert allows_namespace(allowed, namespace) is expected


@pytest.mark.parametrize(
    ("queue_name", "namespace", "message"),
    [
        pytest.param("open-to-all", "team-z", None, id="unrestricted-queue"),
        pytest.param("team-a-only", "team-a", None, id="listed-namespace"),
        pytest.param(
            "team-a-only",
            "team-b",
            "namespace `team-b` is not allowed to submit to queue `team-a-only`",
            id="unlisted-namespace",
        ),
        pytest.param("wildcard", "team-q", None, id="wildcard-queue"),
        pytest.param(
            "reserved",
            "default",
            "namespace `default` is not allowed to submit to queue `reserved`",
            id="reserved-queue",
        ),
        pytest.param("team-b-leaf", "team-b", None, id="allowed-by-leaf-and-parent"),
        pytest.param(
            "team-b-leaf",
            "team-c",
            "namespace `team-c` is not allowed to submit to queue `team-b-leaf` "
            "(restricted by its ancestor `team-parent`)",
            id="refused-by-ancestor",
        ),
        pytest.param("inherits", "team-a", None, id="unrestricted-leaf-under-restricted-parent-allows-parent-list"),
        pytest.param(
            "inherits",
            "team-z",
            "(restricted by its ancestor `team-parent`)",
            id="unrestricted-leaf-inherits-parent-list",
        ),
    ],
)
def test_job_tenancy(queue_name: str, namespace: str, message: str | None) -> None:
    verdict = review("CREATE", job("tenant-job", queue=queue_name, namespace=namespace), None, TEAMS)
    if message is None:
        assert verdict.allowed, verdict.violations
        return
    found = only(verdict, "queue-namespace-allowed")
    assert found.field == "spec.queue"
    assert message in found.message
    assert verdict.to_exception().__class__.__name__ == "PolicyViolation"


def test_podgroup_tenancy() -> None:
    refused = review("CREATE", podgroup(namespace="team-b", queue="team-a-only"), None, TEAMS)
    accepted = review("CREATE", podgroup(namespace="team-a", queue="team-a-only"), None, TEAMS)
    assert (
        only(refused, "queue-namespace-allowed").message
        == "namespace `team-b` is not allowed to submit to queue `team-a-only`"
    )
    assert accepted.allowed


def test_job_in_unset_namespace_counts_as_default() -> None:
    verdict = review("CREATE", job("tenant-job", queue="team-a-only", namespace=""), None, TEAMS)
    assert "namespace `default`" in only(verdict, "queue-namespace-allowed").message


def test_parent_loop_in_stored_queues_does_not_hang() -> None:
    looped = context(queue("a", parent="b", allowed=["x"]), queue("b", parent="a", allowed=["x"]))
    verdict = review("CREATE", job("loop-job", queue="a", namespace="y"), None, looped)
    assert not verdict.allowed


def plain_pod(namespace: str, annotations: dict[str, str] | None = None, scheduler: str = "volcano") -> Pod:
    built = pod("bare", scheduler_name=scheduler, annotations=annotations)
    return replace(built, metadata=replace(built.metadata, namespace=namespace))


@pytest.mark.parametrize(
    ("namespace", "annotations", "scheduler", "refused_queue"),
    [
        pytest.param("team-b", {QUEUE: "team-a-only"}, "volcano", "team-a-only", id="names-a-foreign-queue"),
        pytest.param("team-a", {QUEUE: "team-a-only"}, "volcano", None, id="names-its-own-queue"),
        pytest.param("team-c", {QUEUE: "team-b-leaf"}, "volcano", "team-b-leaf", id="refused-by-an-ancestor"),
        pytest.param("team-b", {QUEUE: "team-a-only"}, "default-scheduler", None, id="not-volcanos-pod"),
        pytest.param(
            "team-b", {QUEUE: "team-a-only", GROUP: "pg-1"}, "volcano", None, id="names-its-group-whose-queue-counts"
        ),
        pytest.param("team-b", None, "volcano", None, id="no-queue-goes-to-default"),
        pytest.param("team-x", None, "volcano", "reserved", id="namespace-default-queue-refuses"),
    ],
)
def test_plain_pod_tenancy(
    namespace: str, annotations: dict[str, str] | None, scheduler: str, refused_queue: str | None
) -> None:
    teams = dataclasses.replace(TEAMS, namespaces={"team-x": {QUEUE: "reserved"}})
    verdict = review("CREATE", plain_pod(namespace, annotations, scheduler), None, teams)
    if refused_queue is None:
        assert verdict.allowed, verdict.violations
        return
    found = only(verdict, "queue-namespace-allowed")
    assert found.field == f"metadata.annotations[{QUEUE}]"
    assert f"namespace `{namespace}` is not allowed to submit to queue `{refused_queue}`" in found.message
    assert verdict.to_exception().__class__.__name__ == "PolicyViolation"

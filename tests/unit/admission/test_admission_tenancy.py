"""Tenancy (Tephra, beyond Volcano): `spec.allowedNamespaces` on a queue and on its ancestors decides
which namespaces may submit Jobs and PodGroups to it."""

from __future__ import annotations

import pytest

from tests.unit.admission.admission_builders import context, job, only, podgroup, queue
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

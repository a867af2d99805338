"""Job defaulting, ported from Volcano's `jobs/mutate/mutate_job_test.go` (TestCreatePatchExecution,
TestMutateSpecPartitionPolicyDefaults) plus each default of `mutate_job.go` on its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.admission_builders import context, job, task, template
from vc_proto.batch import Job, PartitionPolicySpec
from vc_proto.codec import to_dict
from vc_validation import apply_json_patch, json_patch, mutate_job, review


def bare_job(*tasks: Any, **spec: Any) -> Job:
    """A job with nothing defaulted: no queue, scheduler, retries or minAvailable."""
    spec.setdefault("queue", None)
    return job("path-task-name", *tasks, **spec)


def test_patch_default_task_names_and_counts() -> None:
    # Volcano "patch default task": unnamed tasks become default<index>, minAvailable = replicas.
    mutated = mutate_job(bare_job(task(None, replicas=1), task(None, replicas=2)))
    assert mutated.spec is not None and mutated.spec.tasks is not None
    assert [t.name for t in mutated.spec.tasks] == ["default0", "default1"]
    assert [t.min_available for t in mutated.spec.tasks] == [1, 2]
    assert [t.max_retry for t in mutated.spec.tasks] == [3, 3]
    assert mutated.spec.min_available == 3


@pytest.mark.parametrize(
    ("submitted", "expected_min_available"),
    [
        pytest.param(
            task(
                replicas=8, partition_policy=PartitionPolicySpec(total_partitions=2, partition_size=4, min_partitions=1)
            ),
            4,
            id="min-partitions-times-partition-size",
        ),
        pytest.param(
            task(replicas=8, partition_policy=PartitionPolicySpec(total_partitions=2, partition_size=4)),
            8,
            id="partition-without-min-partitions-falls-back-to-replicas",
        ),
        pytest.param(task(replicas=5), 5, id="no-partition-policy-uses-replicas"),
        pytest.param(task(replicas=5, min_available=2), 2, id="explicit-min-available-kept"),
        pytest.param(task(replicas=5, min_available=0), 0, id="explicit-zero-min-available-kept"),
    ],
)
def test_task_min_available_default(submitted: Any, expected_min_available: int) -> None:
    mutated = mutate_job(bare_job(submitted))
    assert mutated.spec is not None and mutated.spec.tasks is not None
    assert mutated.spec.tasks[0].min_available == expected_min_available


@pytest.mark.parametrize(
    ("field", "submitted", "expected"),
    [
        pytest.param("queue", {}, "default", id="queue-defaults-to-default"),
        pytest.param("queue", {"queue": "team-a"}, "team-a", id="queue-kept"),
        pytest.param("scheduler_name", {}, "volcano", id="scheduler-defaults-to-volcano"),
        pytest.param("scheduler_name", {"scheduler_name": "other"}, "other", id="scheduler-kept"),
        pytest.param("max_retry", {}, 3, id="max-retry-defaults-to-3"),
        pytest.param("max_retry", {"max_retry": 0}, 3, id="max-retry-zero-becomes-3"),
        pytest.param("max_retry", {"max_retry": 7}, 7, id="max-retry-kept"),
        pytest.param("min_available", {}, 1, id="job-min-available-is-sum"),
        pytest.param("min_available", {"min_available": 0}, 1, id="job-min-available-zero-becomes-sum"),
        pytest.param("plugins", {}, None, id="no-plugins-stay-absent"),
        pytest.param("plugins", {"plugins": {"mpi": []}}, {"mpi": [], "ssh": [], "svc": []}, id="mpi-adds-ssh-and-svc"),
        pytest.param(
            "plugins", {"plugins": {"tensorflow": []}}, {"tensorflow": [], "svc": []}, id="tensorflow-adds-svc"
        ),
        pytest.param(
            "plugins",
            {"plugins": {"pytorch": ["--port=23"]}},
            {"pytorch": ["--port=23"], "svc": []},
            id="pytorch-adds-svc",
        ),
        pytest.param("plugins", {"plugins": {"ray": []}}, {"ray": [], "svc": []}, id="ray-adds-svc"),
        pytest.param(
            "plugins",
            {"plugins": {"mpi": [], "svc": ["--disable-network-policy"]}},
            {"mpi": [], "svc": ["--disable-network-policy"], "ssh": []},
            id="existing-svc-args-kept",
        ),
        pytest.param("plugins", {"plugins": {"env": []}}, {"env": []}, id="env-needs-nothing"),
    ],
)
def test_job_level_defaults(field: str, submitted: dict[str, Any], expected: object) -> None:
    mutated = mutate_job(bare_job(task(replicas=1), **submitted))
    assert getattr(mutated.spec, field) == expected


def test_scheduler_name_comes_from_configuration() -> None:
    mutated = mutate_job(bare_job(task()), scheduler_name="tephra")
    assert mutated.spec is not None and mutated.spec.scheduler_name == "tephra"


@pytest.mark.parametrize(
    ("host_network", "dns_policy", "expected"),
    [
        pytest.param(True, None, "ClusterFirstWithHostNet", id="host-network-gets-host-net-dns"),
        pytest.param(True, "Default", "Default", id="host-network-explicit-dns-kept"),
        pytest.param(None, None, None, id="pod-network-untouched"),
    ],
)
def test_host_network_dns_policy(host_network: bool | None, dns_policy: str | None, expected: str | None) -> None:
    mutated = mutate_job(bare_job(task(template=template(host_network=host_network, dns_policy=dns_policy))))
    assert mutated.spec is not None and mutated.spec.tasks is not None
    spec = mutated.spec.tasks[0].template.spec  # type: ignore[union-attr]
    assert spec is not None and spec.dns_policy == expected


def test_task_max_retry_unlimited_is_kept() -> None:
    mutated = mutate_job(bare_job(task(max_retry=-1)))
    assert mutated.spec is not None and mutated.spec.tasks is not None
    assert mutated.spec.tasks[0].max_retry == -1


def test_mutation_is_idempotent() -> None:
    once = mutate_job(bare_job(task(None, replicas=2), plugins={"mpi": []}))
    assert mutate_job(once) == once


def test_review_returns_patch_that_rebuilds_the_defaulted_job() -> None:
    submitted = bare_job(task(None, replicas=2, template=template(host_network=True)), plugins={"tensorflow": []})
    verdict = review("CREATE", submitted, None, context())
    assert verdict.allowed, verdict.violations
    patch = json_patch(submitted, verdict.patched)
    assert {"op": "add", "path": "/spec/queue", "value": "default"} in patch
    assert apply_json_patch(to_dict(submitted), patch) == to_dict(verdict.patched)


def test_nothing_to_default_gives_empty_patch() -> None:
    defaulted = mutate_job(bare_job(task(replicas=2)))
    assert json_patch(defaulted, mutate_job(defaulted)) == []

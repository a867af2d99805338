"""Bounds on user input (limits.py): every count and size a user controls is capped, and the request
size is checked before anything is decoded."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.admission.admission_builders import container, context, job, only, policy, task, template
from vc_proto.batch import VolumeSpec
from vc_validation import MAX_REQUEST_BYTES, check_request_size, limits, review


def test_request_at_the_limit_passes() -> None:
    assert check_request_size(MAX_REQUEST_BYTES) is None


def test_request_over_the_limit_is_denied_before_decoding() -> None:
    verdict = check_request_size(MAX_REQUEST_BYTES + 1)
    assert verdict is not None and not verdict.allowed
    found = only(verdict, "request-size")
    assert found.field == "request"
    assert f"exceeds the limit of {3 * 1024 * 1024} bytes" in found.message


def many_tasks(count: int) -> list[Any]:
    return [task(f"t{i}") for i in range(count)]


CASES = [
    pytest.param(job("many-tasks", tasks=many_tasks(limits.MAX_TASKS)), None, None, id="max-tasks-allowed"),
    pytest.param(
        job("too-many-tasks", tasks=many_tasks(limits.MAX_TASKS + 1)),
        "tasks-count",
        "spec.tasks",
        id="too-many-tasks",
    ),
    pytest.param(job("big-task", task(replicas=limits.MAX_REPLICAS_PER_TASK)), None, None, id="max-replicas-allowed"),
    pytest.param(
        job("huge-task", task(replicas=limits.MAX_REPLICAS_PER_TASK + 1)),
        "replicas-limit",
        "spec.tasks[0].replicas",
        id="replicas-over-limit",
    ),
    pytest.param(
        job("huge-int", task(replicas=2**80)), "replicas-limit", "spec.tasks[0].replicas", id="replicas-beyond-int64"
    ),
    pytest.param(
        job("huge-total", tasks=[task(f"t{i}", replicas=limits.MAX_REPLICAS_PER_TASK) for i in range(11)]),
        "replicas-total",
        "spec.tasks",
        id="total-replicas-over-limit",
    ),
    pytest.param(
        job("many-policies", policies=[policy(exit_code=i + 1) for i in range(limits.MAX_POLICIES + 1)]),
        "policies-count",
        "spec.policies",
        id="too-many-policies",
    ),
    pytest.param(
        job("many-plugin-args", plugins={"env": ["x"] * (limits.MAX_PLUGIN_ARGS + 1)}),
        "plugin-args-count",
        "spec.plugins.env",
        id="too-many-plugin-args",
    ),
    pytest.param(
        job("long-plugin-arg", plugins={"pytorch": ["--master=" + "m" * limits.MAX_PLUGIN_ARG_LENGTH]}),
        "plugin-arg-length",
        "spec.plugins.pytorch[0]",
        id="plugin-arg-too-long",
    ),
    pytest.param(
        job("many-plugins", plugins={f"p{i}": [] for i in range(limits.MAX_PLUGINS + 1)}),
        "plugins-count",
        "spec.plugins",
        id="too-many-plugins",
    ),
    pytest.param(
        job("many-volumes", volumes=[VolumeSpec(mount_path=f"/v{i}", volume_claim_name="pvc") for i in range(65)]),
        "volumes-count",
        "spec.volumes",
        id="too-many-volumes",
    ),
    pytest.param(
        job(
            "many-containers", task(template=template(*[container(f"c{i}") for i in range(limits.MAX_CONTAINERS + 1)]))
        ),
        "containers-count",
        "spec.tasks[0].template.spec.containers",
        id="too-many-containers",
    ),
    pytest.param(job("n" * 56, task("t")), None, None, id="pod-name-63-allowed"),
    # A 63-character job name is a valid name, but its pods' names (`<job>-<task>-<index>`) are too long.
    pytest.param(job("n" * 63), "pod-name", "spec.tasks[0].name", id="pod-name-64-refused"),
    pytest.param(job("n" * 64), "job-name", "metadata.name", id="job-name-64-refused"),
    pytest.param(job("long-task-name", task("t" * 64)), "task-name", "spec.tasks[0].name", id="task-name-64-refused"),
    pytest.param(
        job("big-annotations", annotations={"note": "x" * limits.MAX_ANNOTATIONS_BYTES}),
        "annotations-size",
        "metadata.annotations",
        id="annotations-over-256k",
    ),
    pytest.param(
        job("long-label", labels={"team": "v" * 64}), "label-value", "metadata.labels[team]", id="label-value-over-63"
    ),
    pytest.param(
        job("many-labels", labels={f"k{i}": "v" for i in range(limits.MAX_LABELS + 1)}),
        "labels-count",
        "metadata.labels",
        id="too-many-labels",
    ),
    pytest.param(
        job("retry-limit", max_retry=limits.MAX_MAX_RETRY + 1), "max-retry", "spec.maxRetry", id="max-retry-over-limit"
    ),
    pytest.param(
        job("task-retry-limit", task(max_retry=limits.MAX_MAX_RETRY + 1)),
        "max-retry",
        "spec.tasks[0].maxRetry",
        id="task-max-retry-over-limit",
    ),
]


@pytest.mark.parametrize(("submitted", "rule", "field"), CASES)
def test_job_limits(submitted: Any, rule: str | None, field: str | None) -> None:
    verdict = review("CREATE", submitted, None, context())
    if rule is None:
        assert verdict.allowed, verdict.violations
        return
    assert not verdict.allowed
    assert only(verdict, rule).field == field


def test_limits_are_the_documented_numbers() -> None:
    assert (limits.MAX_TASKS, limits.MAX_REPLICAS_PER_TASK, limits.MAX_TOTAL_REPLICAS, limits.MAX_POLICIES) == (
        128,
        10_000,
        100_000,
        64,
    )
    assert (limits.MAX_LABEL_NAME_LENGTH, limits.MAX_SUBDOMAIN_LENGTH) == (63, 253)

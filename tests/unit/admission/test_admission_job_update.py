"""Job UPDATE, ported from Volcano's TestValidateJobUpdate: only replicas/minAvailable (task and job)
and priorityClassName may change, and the new counts must stay consistent."""

from __future__ import annotations

from typing import Any

import pytest
from msgspec.structs import replace

from tests.unit.admission.admission_builders import context, job, only, policy, task
from vc_proto.batch import Job, JobSpec, JobStatus, VolumeSpec
from vc_validation import review


def stored_job(**spec: Any) -> Job:
    """Volcano's `newJob()`: one task of 5 replicas, minAvailable 5, a PodEvicted policy."""
    spec.setdefault("min_available", 5)
    spec.setdefault("policies", [policy("RestartTask", event="PodEvicted")])
    return job("valid-job", task("task-1", replicas=5), **spec)


def edit(old: Job, *, replicas: int | None = None, min_available: int | None = None, **spec: Any) -> Job:
    assert old.spec is not None and old.spec.tasks is not None
    tasks = list(old.spec.tasks)
    if replicas is not None:
        tasks[0] = replace(tasks[0], replicas=replicas)
    new_spec: JobSpec = replace(old.spec, tasks=tasks, **spec)
    if min_available is not None:
        new_spec = replace(new_spec, min_available=min_available)
    return replace(old, spec=new_spec, status=JobStatus(succeeded=2))


EXTRA_TASK = task("task-2", replicas=5)

CASES = [
    pytest.param({"replicas": 6, "min_available": 5}, None, id="scale-up"),
    pytest.param(
        {"replicas": 4, "min_available": 5},
        ("spec.minAvailable", "job-min-available", "job 'minAvailable' must not be greater than total replicas"),
        id="invalid-scale-down-below-min-available",
    ),
    pytest.param({"replicas": 4, "min_available": 3}, None, id="scale-down"),
    pytest.param(
        {"replicas": 4, "min_available": 3, "tasks_extra": True},
        ("spec.tasks", "job-update-tasks", "job updates may not add or remove tasks"),
        id="invalid-add-task",
    ),
    pytest.param(
        {"task_name": "mutated-name"},
        ("spec", "job-update-immutable", "job updates may not change fields other than `minAvailable`"),
        id="invalid-change-task-name",
    ),
    pytest.param(
        {"queue": "mutated-queue"},
        ("spec", "job-update-immutable", "`tasks[*].replicas under spec` and `PriorityClassName`"),
        id="invalid-change-queue",
    ),
    pytest.param({"priority_class_name": "high"}, None, id="priority-class-name-may-change"),
    pytest.param(
        {"replicas": -1, "min_available": 0},
        ("spec.tasks[0].replicas", "replicas-non-negative", "'replicas' must be >= 0 in task: task-1"),
        id="invalid-negative-replicas",
    ),
    pytest.param(
        {"min_available": -1},
        ("spec.minAvailable", "min-available-non-negative", "job 'minAvailable' must be >= 0"),
        id="invalid-negative-job-min-available",
    ),
    pytest.param(
        {"replicas": 20_000, "min_available": 1},
        ("spec.tasks[0].replicas", "replicas-limit", "exceed the limit of 10000"),
        id="invalid-replicas-over-limit",
    ),
    pytest.param(
        {"max_retry": 9},
        ("spec", "job-update-immutable", "may not change fields"),
        id="invalid-change-max-retry",
    ),
]


@pytest.mark.parametrize(("change", "expected"), CASES)
def test_job_update(change: dict[str, Any], expected: tuple[str, str, str] | None) -> None:
    old = stored_job()
    change = dict(change)
    extra, task_name = change.pop("tasks_extra", False), change.pop("task_name", None)
    new = edit(old, **change)
    spec = new.spec
    assert spec is not None and spec.tasks is not None
    if extra:
        new = replace(new, spec=replace(spec, tasks=[*spec.tasks, EXTRA_TASK]))
    if task_name:
        new = replace(new, spec=replace(spec, tasks=[replace(spec.tasks[0], name=task_name)]))
    verdict = review("UPDATE", new, old, context())
    if expected is None:
        assert verdict.allowed, verdict.violations
        assert verdict.patched == new
        return
    assert not verdict.allowed
    field, rule, message = expected
    found = only(verdict, rule)
    assert found.field == field
    assert message in found.message


def test_task_min_available_may_change_within_replicas() -> None:
    old = stored_job()
    assert old.spec is not None and old.spec.tasks is not None
    new = replace(old, spec=replace(old.spec, tasks=[replace(old.spec.tasks[0], min_available=2)]))
    assert review("UPDATE", new, old, context()).allowed


def test_task_min_available_over_replicas_on_update() -> None:
    old = stored_job()
    assert old.spec is not None and old.spec.tasks is not None
    new = replace(old, spec=replace(old.spec, tasks=[replace(old.spec.tasks[0], min_available=6)]))
    found = only(review("UPDATE", new, old, context()), "task-min-available")
    assert found.field == "spec.tasks[0].minAvailable"


def test_generated_pvc_name_is_not_a_user_change() -> None:
    claim = {"accessModes": ["ReadWriteOnce"]}
    old = stored_job(volumes=[VolumeSpec(mount_path="/data", volume_claim=claim)])
    assert old.spec is not None
    new = replace(
        old,
        spec=replace(old.spec, volumes=[VolumeSpec(mount_path="/data", volume_claim=claim, volume_claim_name="pvc-1")]),
    )
    assert review("UPDATE", new, old, context()).allowed


def test_update_without_old_object_is_denied() -> None:
    verdict = review("UPDATE", stored_job(), None, context())
    assert not verdict.allowed and only(verdict, "old-object-required").field == "request"


def test_update_may_change_labels() -> None:
    old = stored_job()
    new = replace(old, metadata=replace(old.metadata, labels={"team": "a"}))
    assert review("UPDATE", new, old, context()).allowed


def test_job_delete_is_allowed() -> None:
    verdict = review("DELETE", None, stored_job(), context())
    assert verdict.allowed and verdict.patched is None

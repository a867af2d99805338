"""Job validation on UPDATE (Volcano `validateJobUpdate`).

Only `spec.minAvailable`, `spec.priorityClassName` and each task's `replicas` and `minAvailable` may
change; the job controller's own fill-in of generated PVC names is ignored. The new counts must still be
consistent, and within the limits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from msgspec.structs import replace

from vc_proto.batch import Job, JobSpec, VolumeSpec
from vc_proto.codec import to_dict
from vc_validation.job_tasks import validate_network_topology, validate_task_counts
from vc_validation.limits import MAX_TASKS, MAX_TOTAL_REPLICAS
from vc_validation.names import validate_metadata_bounds
from vc_validation.verdict import Violation

IMMUTABLE_MESSAGE: Final = (
    "job updates may not change fields other than `minAvailable`, "
    "`tasks[*].replicas under spec` and `PriorityClassName`"
)


def validate_job_update(new: Job, old: Job) -> list[Violation]:
    new_spec, old_spec = new.spec or JobSpec(), old.spec or JobSpec()
    new_tasks = new_spec.tasks or []
    if len(new_tasks) > MAX_TASKS:
        return [
            Violation("spec.tasks", "tasks-count", f"may not have more than {MAX_TASKS} tasks, got {len(new_tasks)}")
        ]
    violations = list(validate_metadata_bounds(new.metadata))
    violations.extend(_validate_counts(new.metadata.name or "", new_spec))
    violations.extend(validate_network_topology(new_spec.network_topology, path="spec.networkTopology"))
    if len(new_tasks) != len(old_spec.tasks or []):
        violations.append(Violation("spec.tasks", "job-update-tasks", "job updates may not add or remove tasks"))
    elif _frozen_view(new_spec) != _frozen_view(old_spec):
        violations.append(Violation("spec", "job-update-immutable", IMMUTABLE_MESSAGE))
    return violations


def _validate_counts(job_name: str, spec: JobSpec) -> Iterator[Violation]:
    tasks = spec.tasks or []
    for index, task in enumerate(tasks):
        yield from validate_task_counts(task, f"spec.tasks[{index}]", job_name)
    total = sum(max(task.replicas or 0, 0) for task in tasks)
    if total > MAX_TOTAL_REPLICAS:
        yield Violation(
            "spec.tasks", "replicas-total", f"total replicas {total} exceed the limit of {MAX_TOTAL_REPLICAS}"
        )
    minimum = spec.min_available or 0
    if minimum > total:
        yield Violation(
            "spec.minAvailable", "job-min-available", "job 'minAvailable' must not be greater than total replicas"
        )
    if minimum < 0:
        yield Violation("spec.minAvailable", "min-available-non-negative", "job 'minAvailable' must be >= 0")


def _frozen_view(spec: JobSpec) -> dict[str, Any]:
    """The spec with every mutable field blanked, as Kubernetes JSON, for comparison."""
    tasks = [replace(task, replicas=None, min_available=None) for task in spec.tasks or []]
    volumes = [_without_generated_claim_name(volume) for volume in spec.volumes or []]
    blanked = replace(
        spec,
        min_available=None,
        priority_class_name=None,
        tasks=tasks if spec.tasks is not None else None,
        volumes=volumes if spec.volumes is not None else None,
    )
    return to_dict(blanked)


def _without_generated_claim_name(volume: VolumeSpec) -> VolumeSpec:
    # The job controller writes the name of the PVC it creates for a `volumeClaim`; not a user change.
    return replace(volume, volume_claim_name=None) if volume.volume_claim is not None else volume

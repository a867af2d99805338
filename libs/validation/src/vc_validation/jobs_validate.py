"""Job validation on CREATE (Volcano `validateJobCreate` plus the checks of its CEL policy and CRD schema).

Every violation is collected (Volcano concatenates its messages too), except two that make the rest
meaningless and so are returned alone, as Volcano does: no task at all, and an mpi job whose master task
is missing. Expects the job already defaulted by `mutate_job`.
"""

from __future__ import annotations

from collections.abc import Iterator

from vc_proto.batch import Job, JobSpec
from vc_proto.vocabulary import DEFAULT_QUEUE
from vc_validation.context import AdmissionContext
from vc_validation.dependencies import validate_depends_on
from vc_validation.job_tasks import validate_network_topology, validate_tasks
from vc_validation.limits import MAX_MAX_RETRY, MAX_TASKS
from vc_validation.names import (
    dns1123_subdomain_errors,
    format_errors,
    qualified_name_errors,
    validate_metadata_bounds,
)
from vc_validation.plugins import MPI_DEFAULT_MASTER, flag_value, validate_plugins
from vc_validation.policies import validate_policies
from vc_validation.submission import validate_submission
from vc_validation.verdict import Violation
from vc_validation.volumes import validate_volumes

DEFAULT_NAMESPACE = "default"


def validate_job_create(job: Job, ctx: AdmissionContext) -> list[Violation]:
    violations = validate_job_spec(job)
    if violations and violations[0].rule in _ALONE:
        return violations
    spec = job.spec or JobSpec()
    namespace = job.metadata.namespace or DEFAULT_NAMESPACE
    violations.extend(validate_submission(ctx, spec.queue or DEFAULT_QUEUE, namespace, kind="job"))
    return violations


def validate_job_spec(job: Job) -> list[Violation]:
    """Every rule of `validate_job_create` that needs no cluster state (all but the queue's)."""
    spec = job.spec or JobSpec()
    tasks = spec.tasks or []
    if not tasks:
        return [Violation("spec.tasks", "tasks-required", "No task specified in job spec")]
    if len(tasks) > MAX_TASKS:
        return [Violation("spec.tasks", "tasks-count", f"may not have more than {MAX_TASKS} tasks, got {len(tasks)}")]
    if missing_master := _missing_mpi_master(spec):
        return [missing_master]
    name = job.metadata.name or ""
    return [
        *validate_job_name(job),
        *validate_metadata_bounds(job.metadata),
        *validate_network_topology(spec.network_topology, path="spec.networkTopology"),
        *validate_tasks(name, tasks),
        *validate_job_fields(spec),
        *validate_policies(spec.policies, path="spec.policies"),
        *validate_plugins(spec.plugins),
        *validate_volumes(spec.volumes),
        *validate_depends_on(tasks),
    ]


# Violations that make the rest meaningless: reported alone, as Volcano does.
_ALONE = frozenset({"tasks-required", "tasks-count", "mpi-master"})


def validate_job_name(job: Job) -> Iterator[Violation]:
    """A job's name prefixes its pods and is the `volcano.sh/job-name` label: a DNS subdomain of <= 63."""
    name = job.metadata.name or ""
    errors = qualified_name_errors(name) or dns1123_subdomain_errors(name)
    if errors:
        yield Violation(
            "metadata.name", "job-name", f"create job with name {name[:253]} validate failed {format_errors(errors)}"
        )


def validate_job_fields(spec: JobSpec) -> Iterator[Violation]:
    """Job-level numbers and names (Volcano's CEL policy and CRD schema)."""
    total = sum(max(task.replicas or 0, 0) for task in spec.tasks or [])
    minimum = spec.min_available or 0
    if minimum < 0:
        yield Violation("spec.minAvailable", "min-available-non-negative", "job 'minAvailable' must be >= 0")
    elif minimum > total:
        yield Violation(
            "spec.minAvailable",
            "job-min-available",
            "job 'minAvailable' should not be greater than total replicas in tasks",
        )
    if spec.max_retry is not None and not 0 <= spec.max_retry <= MAX_MAX_RETRY:
        yield Violation(
            "spec.maxRetry", "max-retry", f"'maxRetry' cannot be less than zero or more than {MAX_MAX_RETRY}"
        )
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        yield Violation("spec.ttlSecondsAfterFinished", "ttl", "'ttlSecondsAfterFinished' cannot be less than zero")
    if spec.min_success is not None and spec.min_success < 1:
        yield Violation("spec.minSuccess", "min-success", "'minSuccess' must be >= 1")
    yield from _validate_names(spec)


def _validate_names(spec: JobSpec) -> Iterator[Violation]:
    for field_name, path, value, limit in (
        ("queue", "spec.queue", spec.queue, 63),
        ("priorityClassName", "spec.priorityClassName", spec.priority_class_name, 253),
        ("schedulerName", "spec.schedulerName", spec.scheduler_name, 63),
    ):
        if value and (errors := dns1123_subdomain_errors(value, max_length=limit)):
            yield Violation(path, f"{field_name}-format", format_errors(errors))


def _missing_mpi_master(spec: JobSpec) -> Violation | None:
    plugins = spec.plugins or {}
    if "mpi" not in plugins:
        return None
    master = flag_value(plugins["mpi"], "mpi", "master", MPI_DEFAULT_MASTER)
    if any(task.name == master for task in spec.tasks or []):
        return None
    return Violation("spec.plugins.mpi", "mpi-master", "The specified mpi master task was not found")

"""A vcjob spec inside another object (a JobTemplate's `spec`, a CronJob's `spec.jobTemplate.spec`),
judged by the rules a vcjob meets at creation, with each violation's field under the outer path.

What needs the job's final name (pod name lengths) is judged again when a controller creates the job
(`derived_jobs`); the queue's existence and state too, since the queue may change in between.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace

from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import Queue
from vc_proto.vocabulary import DEFAULT_QUEUE, DEFAULT_SCHEDULER_NAME
from vc_validation.jobs_mutate import mutate_job
from vc_validation.jobs_validate import validate_job_spec
from vc_validation.tenancy import namespace_violation
from vc_validation.verdict import Violation

# Stands in for the job's name while its spec is judged: the real name is known only at creation.
PLACEHOLDER_NAME = "template"


def validate_embedded_job_spec(
    spec: JobSpec | None, *, path: str, namespace: str, queues: Mapping[str, Queue] | None = None
) -> Iterator[Violation]:
    """`path` is where the JobSpec sits (`spec`, `spec.jobTemplate.spec`)."""
    if spec is None:
        yield Violation(path, "job-spec-required", "a job spec with at least one task is required")
        return
    scheduler = spec.scheduler_name or DEFAULT_SCHEDULER_NAME
    job = Job(api_version=BATCH_V1ALPHA1, metadata=ObjectMeta(name=PLACEHOLDER_NAME, namespace=namespace), spec=spec)
    for violation in validate_job_spec(mutate_job(job, scheduler_name=scheduler)):
        yield _under(violation, path)
    queue = spec.queue or DEFAULT_QUEUE
    if queues is not None and (refused := namespace_violation(queues, queue, namespace, path=f"{path}.queue")):
        yield refused


def _under(violation: Violation, path: str) -> Violation:
    field = violation.field
    if field == "spec" or field.startswith("spec."):
        field = path + field[len("spec") :]
    return replace(violation, field=field) if field != violation.field else violation

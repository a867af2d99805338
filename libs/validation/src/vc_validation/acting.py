"""What a service may act on: admission's rules, applied to an object as it is stored.

Anyone who reaches the store can put an object there past admission. A service that acted on it would
do what admission exists to prevent (a PodGroup and pods for `replicas: -5`, a pod asking 100 GPUs run
on a 1-GPU node), so before acting a service asks these functions whether admission would have accepted
the object. They judge what needs no cluster state; a job's queue is checked by the job controller
against its own cache, and whether a pod fits its node by node-sim against what the node runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.vocabulary import DEFAULT_SCHEDULER_NAME
from vc_validation.jobs_mutate import mutate_job
from vc_validation.jobs_validate import validate_job_spec
from vc_validation.pods import validate_pod_create
from vc_validation.verdict import Violation

MAX_SUMMARY: Final = 1024


def admitted_job(job: Job) -> Job:
    """The job with the defaults admission's CREATE applies (`mutate_job`): what a service acts on, so a
    job that reached the store without admission (its webhook removed or bypassed) is run as it would
    have been admitted (a task without a name is `default0`, not `""`). An admitted job comes back equal."""
    spec = job.spec
    scheduler = (spec.scheduler_name if spec else None) or DEFAULT_SCHEDULER_NAME
    return mutate_job(job, scheduler_name=scheduler)


def job_violations(job: Job) -> list[Violation]:
    """The job after the defaults admission applies (an admitted job is judged as it was admitted),
    against every create rule that needs no cluster state."""
    return validate_job_spec(admitted_job(job))


def pod_violations(pod: Pod, scheduler_names: Sequence[str] = (DEFAULT_SCHEDULER_NAME,)) -> list[Violation]:
    return validate_pod_create(pod, scheduler_names)


def summarize(violations: Sequence[Violation]) -> str:
    """`field: message; ...`, bounded, for a status message, an event or a log line."""
    text = "; ".join(f"{v.field}: {v.message}" if v.field else v.message for v in violations)
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 3] + "..."

"""A vcjob a controller makes from a user's template (a JobFlow's, a CronJob's): would admission take it?

In Volcano the controllers create these jobs through the apiserver, so the vcjob webhooks default and
judge them; a refused create is retried and reported. Tephra's controllers write to the store
directly, so they ask the same rules first: the job as admission would default it, and every
violation of a vcjob CREATE (the queue's existence, state and tenancy included).
"""

from __future__ import annotations

from collections.abc import Mapping

from vc_proto.batch import Job
from vc_proto.scheduling import Queue
from vc_proto.vocabulary import DEFAULT_SCHEDULER_NAME
from vc_validation.context import StaticContext
from vc_validation.jobs_mutate import mutate_job
from vc_validation.jobs_validate import validate_job_create
from vc_validation.verdict import Violation


def admit_derived_job(job: Job, queues: Mapping[str, Queue]) -> tuple[Job, list[Violation]]:
    """The defaulted job, and why admission would refuse it (empty: it may be created)."""
    scheduler = (job.spec.scheduler_name if job.spec else None) or DEFAULT_SCHEDULER_NAME
    defaulted = mutate_job(job, scheduler_name=scheduler)
    return defaulted, validate_job_create(defaulted, StaticContext(queues=queues, scheduler_names=(scheduler,)))

"""The writes the flow controller makes on vcjobs: create (as admission would take it), delete (the job
of that uid only), and the owner's status (a compare-and-set on the version the pass read).

In Volcano these creates go through the apiserver, so the vcjob webhooks default and judge them.
Tephra's controllers write to the store directly, so the same rules are asked first
(`admit_derived_job`): a job admission would refuse is not created, and is reported once per reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import TypeVar

import structlog

from vc_core.errors import AlreadyExists, Conflict, NotFound
from vc_core.times import rfc3339
from vc_flow_controller.metrics import JOBS_CREATED, JOBS_DELETED, STATUS_WRITES
from vc_proto.batch import Job
from vc_proto.cronjob import CronJob
from vc_proto.events import DomainEvent, job_event
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.scheduling import Queue
from vc_runtime.informer import Informer
from vc_runtime.refusals import report_refused
from vc_runtime.sharding import FencedStore
from vc_validation import admit_derived_job, summarize

log = structlog.get_logger(__name__)
Publish = Callable[[DomainEvent], Awaitable[object]]
Owner = JobFlow | CronJob | JobTemplate
OwnerT = TypeVar("OwnerT", JobFlow, CronJob, JobTemplate)
SOURCE = "flow-controller"


class JobWriter:
    def __init__(
        self, *, writer: FencedStore, jobs: Informer[Job], publish: Publish, clock: Callable[[], datetime]
    ) -> None:
        self._writer = writer
        self._jobs = jobs
        self._publish = publish
        self._clock = clock
        self._refused: set[tuple[str, str, str]] = set()  # (owner uid, job name, rule) already reported

    async def create(self, job: Job, owner: JobFlow | CronJob, queues: Mapping[str, Queue]) -> Job | None:
        """The created job; None when admission would refuse it (reported) or one of that name exists."""
        defaulted, violations = admit_derived_job(job, queues)
        kind = type(owner).__name__
        if violations:
            mark = (owner.metadata.uid or "", job.metadata.name or "", violations[0].rule)
            if mark not in self._refused:
                self._refused.add(mark)
                where = f"{job.metadata.namespace}/{job.metadata.name}"
                report_refused(
                    kind="Job",
                    key=where,
                    rule=violations[0].rule,
                    message=summarize(violations),
                    owner=f"{kind}/{owner.metadata.name}",
                )
            return None
        try:
            created = await self._writer.create(defaulted)
        except AlreadyExists:
            return None
        self._jobs.remember(created)
        JOBS_CREATED.labels(kind).inc()
        log.info(
            "job.created",
            owner_kind=kind,
            owner=owner.metadata.name,
            namespace=job.metadata.namespace,
            job=job.metadata.name,
        )
        await self._emit(created, f"Created{kind}Job", f"created by {kind} {owner.metadata.name}")
        return created

    async def delete(self, job: Job, *, owner_kind: str, reason: str) -> None:
        """Delete this job (by uid: never a same-name successor); gone already is fine."""
        try:
            await self._writer.delete(Job, job.metadata.namespace, job.metadata.name or "", uid=job.metadata.uid)
        except (NotFound, Conflict):
            return
        self._jobs.forget(job.metadata.namespace, job.metadata.name or "")
        JOBS_DELETED.labels(owner_kind, reason).inc()
        log.info(
            "job.deleted", owner_kind=owner_kind, reason=reason, namespace=job.metadata.namespace, job=job.metadata.name
        )

    async def write_status(self, obj: OwnerT, informer: Informer[OwnerT]) -> OwnerT | None:
        """Store `obj` (its status changed) if it is still at the version read; None when it was not."""
        try:
            stored = await self._writer.update(obj)
        except (NotFound, Conflict):
            return None  # deleted, or changed since: the change's own event brings a new pass
        informer.remember(stored)
        STATUS_WRITES.labels(type(obj).__name__).inc()
        return stored

    async def get(self, kind: type[OwnerT], namespace: str, name: str) -> OwnerT | None:
        try:
            return await self._writer.get(kind, namespace, name)
        except NotFound:
            return None

    async def get_job(self, namespace: str, name: str) -> Job | None:
        try:
            return await self._writer.get(Job, namespace, name)
        except NotFound:
            return None

    async def _emit(self, job: Job, reason: str, message: str) -> None:
        event = job_event(job, source=SOURCE, reason=reason, message=message, occurred_at=rfc3339(self._clock()))
        try:
            await self._publish(event)
        except Exception as exc:  # history is best effort; the job exists already
            log.warning("job.event_not_published", job=job.metadata.name, error=repr(exc))

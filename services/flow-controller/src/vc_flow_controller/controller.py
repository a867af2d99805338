"""The shell: one dispatcher key per JobFlow, JobTemplate and CronJob, handled by the instance that owns it.

Each pass re-reads the caches, asks the pure planners (`logic/`) what to do, and writes: jobs created
create-if-absent under deterministic names, deleted by uid, status written compare-and-set. Any crash
between two writes is finished by the next pass. A JobFlow or CronJob that is gone takes its jobs with
it (as Kubernetes' garbage collector does with their owner references), once the store confirms it gone.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import msgspec
import structlog

from vc_core.times import rfc3339
from vc_flow_controller.caches import FlowCaches
from vc_flow_controller.jobwriter import JobWriter
from vc_flow_controller.logic.cron_plan import CronPlan, is_finished, plan_cron
from vc_flow_controller.logic.flow_plan import plan_flow
from vc_flow_controller.logic.owners import OwnerKey, controller_ref, is_controlled_by
from vc_flow_controller.logic.templates import template_status
from vc_flow_controller.metrics import NOTES
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.cronjob import CronJob, CronJobStatus, ObjectReference
from vc_proto.flow import JobFlow
from vc_runtime.sharding import Ownership

log = structlog.get_logger(__name__)
Clock = Callable[[], datetime]


def wall_clock() -> datetime:
    return datetime.now(UTC)


def ownership_key(key: OwnerKey) -> str:
    return "/".join(key)


class FlowController:
    def __init__(
        self,
        *,
        caches: FlowCaches,
        writes: JobWriter,
        ownership: Ownership,
        arm: Callable[[OwnerKey, float], None],
        clock: Clock = wall_clock,
    ) -> None:
        self._caches = caches
        self._writes = writes
        self._ownership = ownership
        self._arm = arm
        self._clock = clock

    async def handle(self, key: OwnerKey) -> None:
        if not self._caches.synced() or not self._ownership.owns(ownership_key(key)):
            return
        kind, namespace, name = key
        if kind == "JobFlow":
            flow = self._caches.flows.get(namespace, name)
            await (self._sync_flow(key, flow) if flow is not None else self._collect(key))
        elif kind == "CronJob":
            cronjob = self._caches.cronjobs.get(namespace, name)
            await (self._sync_cron(key, cronjob) if cronjob is not None else self._collect(key))
        elif kind == "JobTemplate":
            await self._sync_template(key)

    # -- JobFlow ---------------------------------------------------------------------------------------
    async def _sync_flow(self, key: OwnerKey, flow: JobFlow) -> None:
        if flow.metadata.deletion_timestamp is not None:
            return
        jobs = await self._owned(key, flow)
        plan = plan_flow(flow, jobs, self._caches.templates_in(key[1]), self._clock())
        for job in plan.delete:
            await self._writes.delete(job, owner_kind="JobFlow", reason="retain-policy")
        queues = self._caches.queue_map()
        for job in plan.create:
            await self._writes.create(job, flow, queues)
        if plan.missing_templates:
            log.debug(
                "jobflow.waiting_for_templates",
                namespace=key[1],
                jobflow=key[2],
                templates=list(plan.missing_templates),
            )
        if plan.status is not None:
            await self._writes.write_status(msgspec.structs.replace(flow, status=plan.status), self._caches.flows)

    # -- JobTemplate -----------------------------------------------------------------------------------
    async def _sync_template(self, key: OwnerKey) -> None:
        template = self._caches.templates.get(key[1], key[2])
        if template is None:
            return
        names = [job.metadata.name or "" for job in self._caches.jobs_from_template(key)]
        status = template_status(template, names)
        if status is not None:
            await self._writes.write_status(msgspec.structs.replace(template, status=status), self._caches.templates)

    # -- CronJob ---------------------------------------------------------------------------------------
    async def _sync_cron(self, key: OwnerKey, cronjob: CronJob) -> None:
        if cronjob.metadata.deletion_timestamp is not None:
            return
        owned = await self._owned(key, cronjob)
        now = self._clock()
        plan = plan_cron(cronjob, owned, lambda name: self._caches.jobs.get(key[1], name), now)
        for note in plan.notes:
            NOTES.labels("CronJob", note.reason).inc()
            log.info(
                "cronjob.event",
                namespace=key[1],
                cronjob=key[2],
                type=note.type,
                reason=note.reason,
                message=note.message,
            )
        for job in plan.delete:
            await self._writes.delete(job, owner_kind="CronJob", reason="history-or-replace")
        status = await self._start(cronjob, plan)
        if status != (cronjob.status or CronJobStatus()):
            await self._writes.write_status(msgspec.structs.replace(cronjob, status=status), self._caches.cronjobs)
        if plan.requeue is not None:
            self._arm(key, plan.requeue.total_seconds())

    async def _start(self, cronjob: CronJob, plan: CronPlan) -> CronJobStatus:
        """The status after creating the due job (if any): it joins `active`, its time is the last scheduled."""
        status = plan.status
        if plan.create is None or plan.scheduled is None:
            return status
        job = await self._writes.create(plan.create, cronjob, self._caches.queue_map())
        if job is None:
            job = await self._writes.get_job(plan.create.metadata.namespace or "", plan.create.metadata.name or "")
            if job is None or not is_controlled_by(job, cronjob) or is_finished(job):
                return status  # refused, foreign, or this time already ran to the end
        if any(ref.uid == job.metadata.uid for ref in status.active or ()):
            return status
        ref = ObjectReference(
            kind="Job",
            namespace=job.metadata.namespace,
            name=job.metadata.name,
            uid=job.metadata.uid,
            api_version=BATCH_V1ALPHA1,
            resource_version=job.metadata.resource_version,
        )
        return msgspec.structs.replace(
            status, active=[*(status.active or []), ref], last_schedule_time=rfc3339(plan.scheduled)
        )

    # -- owners and orphans ----------------------------------------------------------------------------
    async def _owned(self, key: OwnerKey, owner: JobFlow | CronJob) -> list[Job]:
        """The jobs this owner controls; jobs of an earlier owner of the same name are collected."""
        jobs = self._caches.jobs_of(key)
        mine = [job for job in jobs if is_controlled_by(job, owner)]
        if len(mine) < len(jobs):
            await self._collect(key, [job for job in jobs if not is_controlled_by(job, owner)])
        return mine

    async def _collect(self, key: OwnerKey, jobs: list[Job] | None = None) -> None:
        """Jobs whose owner is gone (or was replaced by a new object of its name): once the store confirms
        it, they go too. The cache alone proves nothing: it may lag behind a re-creation."""
        jobs = self._caches.jobs_of(key) if jobs is None else jobs
        if not jobs:
            return
        stored: JobFlow | CronJob | None
        if key[0] == "JobFlow":
            stored = await self._writes.get(JobFlow, key[1], key[2])
        else:
            stored = await self._writes.get(CronJob, key[1], key[2])
        for job in jobs:
            ref = controller_ref(job)
            if ref is not None and (stored is None or stored.metadata.uid != ref.uid):
                await self._writes.delete(job, owner_kind=key[0], reason="owner-deleted")

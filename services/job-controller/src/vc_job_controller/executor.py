"""Carry out a Plan through the store, in the order `logic/plan.py` documents. Every step is idempotent:
names are deterministic, AlreadyExists on create and NotFound on delete count as done, and updates are
compare-and-set, so re-running a plan after a crash re-does only what is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

import msgspec
import structlog

from vc_core.errors import AlreadyExists, NotFound
from vc_core.retry import RetryPolicy
from vc_core.store import ObjectStore
from vc_core.times import rfc3339
from vc_job_controller import volcano_metrics
from vc_job_controller.logic.history import HistoryEvent
from vc_job_controller.logic.plan import ObjectWrite, Plan, PodDeletion, WriteMode
from vc_proto.batch import Job
from vc_proto.core import ConfigMap, NetworkPolicy, PersistentVolumeClaim, Pod, Secret, Service
from vc_proto.events import DomainEvent, event_id, job_event
from vc_proto.kinds import KINDS
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import OUT_OF_SYNC_KEY

log = structlog.get_logger(__name__)
MAX_PARALLEL_CREATES = 32
# A history publish is tried up to 5 times through NATS timeouts and reconnects (the transport's errors,
# any kind): the pass that made the transition is the only one that reports it.
HISTORY_PUBLISH_RETRY = RetryPolicy((Exception,), base_s=0.2, cap_s=1.6, attempts=5)
# Publishes one pass's history events as one batch (vc_bus.events.EventPublisher.publish_batch).
Publish = Callable[[Sequence[DomainEvent]], Awaitable[object]]
Remember = Callable[[Pod | PodGroup], None]
_PLUGIN_KINDS: dict[str, type[Service | ConfigMap | Secret | NetworkPolicy | PersistentVolumeClaim]] = {
    "Service": Service,
    "ConfigMap": ConfigMap,
    "Secret": Secret,
    "NetworkPolicy": NetworkPolicy,
    "PersistentVolumeClaim": PersistentVolumeClaim,
}


class PlanExecutor:
    def __init__(self, store: ObjectStore, publish: Publish, *, source: str, remember: Remember | None = None) -> None:
        self._store = store
        self._publish = publish
        self._source = source
        # Told of every pod and PodGroup this executor created, so the caller's caches hold them before
        # the watch delivers them (else the next pass would create them again: client-go's expectations).
        self._remember = remember

    async def execute(self, job: Job, plan: Plan) -> Job:
        """Returns the job as stored afterwards. Raises Conflict when the job changed meanwhile."""
        namespace = job.metadata.namespace or "default"
        podgroup_to_create, podgroup_to_update = plan.podgroup_to_create, plan.podgroup_to_update
        steps: list[Callable[[], Awaitable[object]]] = [
            *(lambda w=w: self._write_object(w) for w in plan.objects_to_write),
            *([lambda: self._create(podgroup_to_create)] if podgroup_to_create else []),
            *([lambda: self._update_podgroup(podgroup_to_update)] if podgroup_to_update else []),
            *(lambda d=d: self._delete_pod(namespace, d) for d in plan.pods_to_delete),
            *([lambda: self._create_all(plan.pods_to_create, job)] if plan.pods_to_create else []),
        ]
        for step in steps:
            await step()
        if plan.status is not None:
            before, job = job, await self._store.update(msgspec.structs.replace(job, status=plan.status))
            volcano_metrics.phase_written(before, job)
        # History right after the transition is stored: a retried request re-decides from the new
        # state and would not report the transition again, so nothing below may come between. The
        # pass's events go as one batch: one write (and fsync) per subject, not one per event.
        if plan.events:
            await self._publish_with_retry([self._domain_event(job, event) for event in plan.events])
        if plan.podgroup_to_delete:
            await self._delete(PodGroup, namespace, plan.podgroup_to_delete)
        for ref in plan.objects_to_delete:
            await self._delete(_PLUGIN_KINDS[ref.kind], namespace, ref.name)
        return job

    async def _publish_with_retry(self, events: list[DomainEvent]) -> None:
        """The batch's id (derived from its events' ids) de-duplicates retries, so publishing again after
        an unknown outcome is safe."""

        def on_retry(error: BaseException, failures: int, delay_s: float) -> None:
            log.info("history.publish_retry", error=repr(error), attempt=failures, delay_s=delay_s)

        await HISTORY_PUBLISH_RETRY.call(lambda: self._publish(events), sleep=asyncio.sleep, on_retry=on_retry)

    async def _create(
        self, obj: Pod | PodGroup | Service | ConfigMap | Secret | NetworkPolicy | PersistentVolumeClaim
    ) -> bool:
        """Whether this call created it."""
        try:
            stored = await self._store.create(obj)
        except AlreadyExists:
            return False  # a previous attempt (or another life of this controller) got there first
        if self._remember is not None and isinstance(stored, Pod | PodGroup):
            self._remember(stored)
        return True

    async def _create_all(self, pods: tuple[Pod, ...], job: Job) -> None:
        """A gang's pods are independent writes: in flight together (bounded), not one round trip each.
        Every create finishes before the first error is raised; a retried plan re-creates only the rest."""
        gate = asyncio.Semaphore(MAX_PARALLEL_CREATES)

        async def create(pod: Pod) -> bool:
            async with gate:
                return await self._create(pod)

        outcomes = await asyncio.gather(*(create(p) for p in pods), return_exceptions=True)
        volcano_metrics.pods_created(job, sum(1 for outcome in outcomes if outcome is True))
        failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if failed:
            await self._report_failed_create(job, failed)
            raise failed[0]

    async def _report_failed_create(self, job: Job, errors: list[BaseException]) -> None:
        """Volcano's `FailedCreate` on the job: the history says it, and the Kubernetes Event recorder
        (vc_runtime.event_recorder) makes it an Event. Best effort: the plan is retried anyway."""
        said = list(dict.fromkeys(str(e) for e in errors if isinstance(e, Exception)))
        if not said:
            return  # cancelled, not failed
        message = f"Error creating pods: {'; '.join(said[:3])}"[:1024]
        event = job_event(
            job,
            source=self._source,
            reason="FailedCreate",
            message=message,
            occurred_at=rfc3339(datetime.now(UTC)),
            identity=(message,),
        )
        try:
            await self._publish([event])
        except Exception as exc:  # the history is best effort here; the error itself is raised
            log.info("history.failed_create_not_published", error=repr(exc))

    async def _write_object(self, write: ObjectWrite) -> None:
        obj = write.obj
        if write.mode is WriteMode.CREATE_IF_ABSENT:
            await self._create(obj)
            return
        try:
            current = await self._store.get(type(obj), obj.metadata.namespace, obj.metadata.name or "")
        except NotFound:
            await self._create(obj)
            return
        desired = msgspec.structs.replace(obj, metadata=current.metadata)
        if desired != current:
            await self._store.update(desired)

    async def _update_podgroup(self, pg: PodGroup) -> None:
        current = await self._store.get(PodGroup, pg.metadata.namespace, pg.metadata.name or "")
        if current.spec != pg.spec:
            await self._store.update(msgspec.structs.replace(current, spec=pg.spec))

    async def _delete_pod(self, namespace: str, deletion: PodDeletion) -> None:
        try:
            pod = await self._store.get(Pod, namespace, deletion.name)
        except NotFound:
            return
        if deletion.uid and pod.metadata.uid != deletion.uid:
            return  # a newer pod of the same name: not ours to kill
        if deletion.mark_out_of_sync and (pod.metadata.annotations or {}).get(OUT_OF_SYNC_KEY) != "true":
            annotations = {**(pod.metadata.annotations or {}), OUT_OF_SYNC_KEY: "true"}
            pod = await self._store.update(
                msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, annotations=annotations))
            )
        try:
            await self._store.delete(Pod, namespace, deletion.name, uid=pod.metadata.uid)
        except NotFound:
            pass

    async def _delete(self, kind: type, namespace: str, name: str) -> None:
        try:
            await self._store.delete(kind, namespace if KINDS[kind.__name__].namespaced else None, name)
        except NotFound:
            pass

    def _domain_event(self, job: Job, event: HistoryEvent) -> DomainEvent:
        st = job.status
        return DomainEvent(
            id=event_id(
                job.metadata.uid,
                st.retry_count if st else 0,
                st.version if st else 0,
                event.kind,
                event.name,
                event.reason,
                event.previous_phase,
                event.phase,
                event.exit_code,
                event.uid,
                event.message if event.kind == "Job" else "",
            ),
            occurred_at=event.occurred_at,
            source=self._source,
            kind=event.kind,
            namespace=event.namespace,
            name=event.name,
            reason=event.reason,
            message=event.message,
            job=event.job or job.metadata.name,
            task=event.task,
            uid=event.uid,
            phase=event.phase,
            previous_phase=event.previous_phase,
            exit_code=event.exit_code,
            node=event.node,
            queue=job.spec.queue if job.spec else None,
        )

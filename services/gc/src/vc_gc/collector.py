"""The shell around `expired`: one dispatcher key per owner `(kind, namespace, name)`.

For a job key: delete the job once its TTL has run, after re-reading it and with its uid as the
precondition (never a same-name successor). For every owner key: delete the dependents whose
controller owner is gone. Both run only once every cache has synced, and an owner's absence is
confirmed against the store, never taken from a cache alone.

Timers are the dispatcher's delayed keys, on the monotonic clock; the deadline itself comes from the
stored finish time and is checked again against the wall clock when the timer fires, so a restart
or a clock step never deletes early.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import structlog

from vc_core.errors import Conflict, NotFound
from vc_core.times import rfc3339
from vc_gc.caches import GcCaches, identity
from vc_gc.logic.expiry import expired, finished_in_future, is_collectable, phase_of
from vc_gc.logic.owners import OwnerKey, delete_gracefully, is_orphan
from vc_gc.metrics import DEFERRED, DELETED
from vc_proto.batch import Job
from vc_proto.events import DomainEvent, job_event
from vc_proto.kinds import KINDS, KubeObject
from vc_runtime.sharding import FencedStore, Ownership

log = structlog.get_logger(__name__)
Clock = Callable[[], datetime]
Publish = Callable[[DomainEvent], Awaitable[object]]
SOURCE = "gc"
# Fire a little after the deadline: the re-check against the wall clock must find it passed.
TIMER_SLACK_S = 0.05


def ownership_key(key: OwnerKey) -> str:
    return "/".join(key)


def wall_clock() -> datetime:
    return datetime.now(UTC)


class Collector:
    def __init__(
        self,
        *,
        caches: GcCaches,
        writer: FencedStore,
        ownership: Ownership,
        arm: Callable[[OwnerKey, float], None],
        publish: Publish,
        gc_aborted: bool = False,
        clock: Clock = wall_clock,
    ) -> None:
        self._caches = caches
        self._writer = writer
        self._ownership = ownership
        self._arm = arm
        self._publish = publish
        self._gc_aborted = gc_aborted
        self._clock = clock
        # Jobs already warned about (by uid and reason), so periodic passes do not repeat the warning.
        self._warned: set[tuple[str, str]] = set()

    async def handle(self, key: OwnerKey) -> None:
        if not self._caches.synced() or not self._ownership.owns(ownership_key(key)):
            return
        if key[0] == "Job":
            await self._collect_job(key)
        await self._collect_orphans(key)

    # -- finished jobs -----------------------------------------------------------------------------
    async def _collect_job(self, key: OwnerKey) -> None:
        cached = self._caches.jobs.get(key[1], key[2])
        if cached is None or not self._due(cached):
            return
        try:
            fresh = await self._writer.get(Job, key[1], key[2])  # the cache may be stale: final check
        except NotFound:
            return
        if not self._due(fresh):
            return
        try:
            await self._writer.delete(Job, key[1], key[2], uid=fresh.metadata.uid)
        except (NotFound, Conflict):
            return  # gone already, or replaced by a new job of that name: its own pass decides
        DELETED.labels("Job", "ttl").inc()
        for event in ("job.finish_time_missing", "job.finished_in_future"):
            self._warned.discard((fresh.metadata.uid or "", event))
        log.info(
            "job.collected",
            namespace=key[1],
            job=key[2],
            phase=phase_of(fresh),
            ttl_s=fresh.spec.ttl_seconds_after_finished if fresh.spec else None,
        )
        await self._emit(fresh)

    def _due(self, job: Job) -> bool:
        """True when the job's TTL has run; otherwise arm a timer for when it will have (if ever)."""
        now = self._clock()
        left = expired(job, now, gc_aborted=self._gc_aborted)
        if left is None:
            if is_collectable(job, gc_aborted=self._gc_aborted):
                self._warn_once(job, "job.finish_time_missing")
            return False
        if left > timedelta(0):
            if finished_in_future(job, now):
                self._warn_once(job, "job.finished_in_future", note="likely clock skew; cleanup deferred")
            self._arm(identity(job), left.total_seconds() + TIMER_SLACK_S)
            return False
        return True

    def _warn_once(self, job: Job, event: str, **details: str) -> None:
        mark = (job.metadata.uid or "", event)
        if mark in self._warned:
            return
        self._warned.add(mark)
        if event == "job.finished_in_future":
            DEFERRED.labels("clock_skew").inc()
        log.warning(event, namespace=job.metadata.namespace, job=job.metadata.name, **details)

    # -- orphans -----------------------------------------------------------------------------------
    async def _collect_orphans(self, key: OwnerKey) -> None:
        dependents = self._caches.dependents_of(key)
        if not dependents:
            return
        owner = self._caches.cached_owner(key)
        if owner is None or any(is_orphan(d, owner) for d in dependents):
            owner = await self._stored_owner(key)  # absence must be proven, not inferred from a cache
        for dependent in dependents:
            if is_orphan(dependent, owner):
                await self._delete_dependent(dependent, key)

    async def _stored_owner(self, key: OwnerKey) -> KubeObject | None:
        kind, namespace, name = key
        try:
            return await self._writer.get(KINDS[kind].type, namespace, name)
        except NotFound:
            return None

    async def _delete_dependent(self, dependent: KubeObject, key: OwnerKey) -> None:
        kind, namespace, name = identity(dependent)
        if dependent.metadata.deletion_timestamp is not None:
            return  # already terminating on its node
        try:
            await self._writer.delete(
                KINDS[kind].type, namespace, name, uid=dependent.metadata.uid, grace=delete_gracefully(dependent)
            )
        except (NotFound, Conflict):
            return  # gone, or a new object took the name: not ours to judge from this pass
        DELETED.labels(kind, "orphan").inc()
        log.info("dependent.collected", kind=kind, namespace=namespace, name=name, owner=ownership_key(key))

    async def _emit(self, job: Job) -> None:
        event = job_event(
            job,
            source=SOURCE,
            reason="GarbageCollected",
            message=f"deleted {job.spec.ttl_seconds_after_finished if job.spec else 0}s after it finished",
            occurred_at=rfc3339(self._clock()),
            phase=phase_of(job),
        )
        try:
            await self._publish(event)
        except Exception as exc:  # history is best effort; the deletion already happened
            log.warning("job.event_not_published", job=job.metadata.name, error=repr(exc))

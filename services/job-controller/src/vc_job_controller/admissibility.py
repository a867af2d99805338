"""SHELL: would admission accept this stored job? Asked before every reconcile, answered from a memo.

The rules are pure (`vc_validation.job_violations`) but not free, and a job is reconciled many times
with the same spec: the verdict is kept per job until its uid, spec, labels or annotations change.
The job's queue must exist too; that is read from the controller's queue cache, and from the store
when the cache lacks it (a queue created a moment before the job may not have reached the cache yet).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from vc_proto.batch import Job, JobSpec
from vc_proto.vocabulary import DEFAULT_QUEUE
from vc_validation import Violation, job_violations

JobKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Verdict:
    uid: str | None
    spec: JobSpec | None
    labels: dict[str, str] | None
    annotations: dict[str, str] | None
    violations: tuple[Violation, ...]

    def holds_for(self, job: Job) -> bool:
        meta = job.metadata
        if self.uid != meta.uid or self.labels != meta.labels or self.annotations != meta.annotations:
            return False
        return self.spec is job.spec or self.spec == job.spec


class Admissibility:
    def __init__(self, *, queue_exists: Callable[[str], Awaitable[bool]]) -> None:
        self._queue_exists = queue_exists
        self._verdicts: dict[JobKey, _Verdict] = {}

    async def violations(self, key: JobKey, job: Job) -> tuple[Violation, ...]:
        found = self._spec_violations(key, job)
        if found:
            return found
        queue = (job.spec.queue if job.spec else None) or DEFAULT_QUEUE
        if await self._queue_exists(queue):
            return ()
        message = f'unable to find job queue: queue.scheduling.volcano.sh "{queue[:253]}" not found'
        return (Violation("spec.queue", "queue-exists", message),)

    def forget(self, key: JobKey) -> None:
        self._verdicts.pop(key, None)

    def _spec_violations(self, key: JobKey, job: Job) -> tuple[Violation, ...]:
        known = self._verdicts.get(key)
        if known is not None and known.holds_for(job):
            return known.violations
        meta = job.metadata
        found = tuple(job_violations(job))
        self._verdicts[key] = _Verdict(meta.uid, job.spec, meta.labels, meta.annotations, found)
        return found

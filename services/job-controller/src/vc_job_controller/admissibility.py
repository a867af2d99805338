"""SHELL: would admission accept this stored job, and as what? Asked before every reconcile, answered
from a memo.

The rules are pure (`vc_validation.job_violations`) but not free, and a job is reconciled many times
with the same spec: the verdict is kept per job until its uid, spec, labels or annotations change.
The job's queue must exist too; that is read from the controller's queue cache, and from the store
when the cache lacks it (a queue created a moment before the job may not have reached the cache yet).

The same memo holds the job's spec with admission's defaults (`vc_validation.admitted_job`): the
controller acts on that, so a job that reached the store past admission (no webhook registered, or
one bypassed) runs as admission would have stored it, never with a task named `""` whose pods no
gang can count.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from msgspec.structs import replace

from vc_proto.batch import Job, JobSpec
from vc_proto.vocabulary import DEFAULT_QUEUE
from vc_validation import Violation, admitted_job, validate_job_spec

JobKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Verdict:
    uid: str | None
    spec: JobSpec | None
    labels: dict[str, str] | None
    annotations: dict[str, str] | None
    violations: tuple[Violation, ...]
    admitted_spec: JobSpec | None  # the spec with admission's defaults
    defaulted: bool  # admission's defaults change the spec (it reached the store past admission)

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

    def admitted(self, key: JobKey, job: Job) -> Job:
        """`job` as admission would have stored it: its spec defaulted, everything else as stored."""
        verdict = self._verdict(key, job)
        return replace(job, spec=verdict.admitted_spec) if verdict.defaulted else job

    def _spec_violations(self, key: JobKey, job: Job) -> tuple[Violation, ...]:
        return self._verdict(key, job).violations

    def _verdict(self, key: JobKey, job: Job) -> _Verdict:
        known = self._verdicts.get(key)
        if known is not None and known.holds_for(job):
            return known
        meta = job.metadata
        admitted = admitted_job(job)
        violations = tuple(validate_job_spec(admitted))
        defaulted = admitted.spec != job.spec
        verdict = _Verdict(meta.uid, job.spec, meta.labels, meta.annotations, violations, admitted.spec, defaulted)
        self._verdicts[key] = verdict
        return verdict

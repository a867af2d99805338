"""enqueue: admit Pending PodGroups to Inqueue while queues and cluster have room (Volcano enqueue.go)."""

from __future__ import annotations

from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import PluginArgs, Vote
from vc_sched_core.framework.model import JobInfo, PodGroupPhase, QueueInfo
from vc_sched_core.framework.ordering import PriorityQueue
from vc_sched_core.framework.session import Session

NAME: Final = "enqueue"


class EnqueueAction:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.args = dict(args or {})

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        pending: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs_by_uid():
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            if queue.name not in pending:
                pending[queue.name] = PriorityQueue(ssn.job_order)
                queues.push(queue)
            if job.is_pending():
                pending[queue.name].push(job)
        while not queues.empty():
            queue = queues.pop()
            jobs = pending[queue.name]
            if jobs.empty():
                continue
            self._try_enqueue(ssn, jobs.pop())
            queues.push(queue)  # a rejected job must not block the next one of its queue

    @staticmethod
    def _try_enqueue(ssn: Session, job: JobInfo) -> None:
        # Without minResources Volcano admits the job without asking any plugin.
        if job.min_resources is not None:
            verdict = ssn.job_enqueueable(job)
            if verdict.vote == Vote.REJECT:
                for i, reason in enumerate(ssn.enqueue_rejections(job)):
                    job.why[f"enqueue:{i}"] = reason
                return
        ssn.job_enqueued(job)
        job.phase = PodGroupPhase.INQUEUE

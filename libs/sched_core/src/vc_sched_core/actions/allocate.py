"""allocate: place pending tasks job by job, gang-atomically (Volcano allocate.go).

A job's placements live in one statement: committed (bound) only when the job is ready, kept in the
session when merely pipelined, discarded otherwise, so a gang is placed whole or not at all. A gang with
a hard network topology whose try is discarded is tried again in the next candidate hypernode (Volcano's
hypernode loop; the plugin answers at ExtensionPoint.HYPERNODE_RETRY), each try in a fresh statement.
"""

from __future__ import annotations

from typing import ClassVar, Final

from vc_sched_core.framework.fit_errors import FitErrors
from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import JobInfo, PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.node_search import find_feasible_nodes, fits_idle, select_best_node
from vc_sched_core.framework.ordering import PriorityQueue
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.statement import Statement

NAME: Final = "allocate"


class AllocateAction:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        args = dict(args or {})
        self.predicate_error_cache = bool(args.get("predicateErrorCacheEnable", True))

    def execute(self, ssn: Session) -> None:
        queues, jobs_by_queue = self._pick_queues_and_jobs(ssn)
        worksheets: dict[str, PriorityQueue[TaskInfo]] = {}
        while not queues.empty():
            if ssn.budget_spent():
                # The rest waits for the next session, which the scheduler runs at once: binds flow
                # while a large backlog is planned, instead of after one long session over all of it.
                ssn.deferred.update(
                    job.uid
                    for waiting in jobs_by_queue.values()
                    for job in waiting.items()
                    if job.uid not in worksheets
                )
                return
            queue = queues.pop()
            if ssn.overused(queue):
                continue
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            if job.uid not in worksheets:
                worksheets[job.uid] = self._worksheet(ssn, job)
            tasks = worksheets[job.uid]
            if not tasks.empty():
                self._allocate_job(ssn, job, tasks, jobs, queue)
            queues.push(queue)  # re-ordered with its new allocation

    @staticmethod
    def _pick_queues_and_jobs(ssn: Session) -> tuple[PriorityQueue[QueueInfo], dict[str, PriorityQueue[JobInfo]]]:
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order)
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        enqueue_configured = ssn.action_enabled("enqueue")
        for job in ssn.jobs_by_uid():
            if job.is_pending():
                if enqueue_configured:
                    continue
                job.phase = PodGroupPhase.INQUEUE  # no enqueue action: allocate admits by itself
            queue = ssn.queue_of(job)
            if queue is None:
                continue
            if queue.name not in jobs_by_queue:
                jobs_by_queue[queue.name] = PriorityQueue(ssn.job_order)
                queues.push(queue)
            # A job with nothing to place would be popped and skipped (its worksheet is empty, its
            # queue's order unchanged): leave it out, so a busy cluster's many running jobs cost no
            # ordering work.
            pending = job.by_status.get(TaskStatus.PENDING)
            if pending and any(not t.best_effort for t in pending.values()):
                jobs_by_queue[queue.name].push(job)
        return queues, jobs_by_queue

    @staticmethod
    def _worksheet(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
        return PriorityQueue(ssn.task_order, _pending(job))

    def _allocate_job(
        self,
        ssn: Session,
        job: JobInfo,
        tasks: PriorityQueue[TaskInfo],
        jobs: PriorityQueue[JobInfo],
        queue: QueueInfo,
    ) -> None:
        while True:
            stmt = Statement(ssn)
            self._try_job(ssn, stmt, job, tasks, jobs, queue)
            if ssn.job_ready(job):
                stmt.commit()
                ssn.release_binds(job)
                return
            if ssn.job_pipelined(job):
                return
            stmt.discard()
            if not self._next_hypernode(ssn, job):
                return
            # Volcano clones the task queue and resets the job's fit errors for each hypernode it tries.
            job.nodes_fit_errors = {}
            while not tasks.empty():
                tasks.pop()
            for task in _pending(job):
                tasks.push(task)

    def _try_job(
        self,
        ssn: Session,
        stmt: Statement,
        job: JobInfo,
        tasks: PriorityQueue[TaskInfo],
        jobs: PriorityQueue[JobInfo],
        queue: QueueInfo,
    ) -> None:
        failed_classes: set[bytes] = set()
        while not tasks.empty():
            task = tasks.pop()
            if not self._place(ssn, stmt, job, task, queue, failed_classes):
                if job.nodes_fit_errors.get(task.uid) is not None and not job.need_continue_allocating():
                    break
                continue
            if ssn.job_ready(job) and not tasks.empty():
                jobs.push(job)
                break

    @staticmethod
    def _next_hypernode(ssn: Session, job: JobInfo) -> bool:
        """Whether a discarded gang is tried again: only a hard network topology's, in its next hypernode,
        and only when nodes refused it (a queue's refusal would follow it into every hypernode)."""
        topology = job.podgroup.network_topology
        if topology is None or not job.nodes_fit_errors:
            return False
        return any(retry(job) for retry in ssn.fns(ExtensionPoint.HYPERNODE_RETRY))

    def _place(
        self,
        ssn: Session,
        stmt: Statement,
        job: JobInfo,
        task: TaskInfo,
        queue: QueueInfo,
        failed_classes: set[bytes],
    ) -> bool:
        check = ssn.allocatable(queue, task)
        if not check.ok:
            if check.reason:
                job.why[f"allocate:{queue.name}"] = check.reason
            return False
        # Predicate error cache: a sibling of the same template already found no node.
        if self.predicate_error_cache and task.class_key in failed_classes:
            return False
        error = ssn.pre_predicate(task)
        if error:
            job.nodes_fit_errors[task.uid] = _whole_cluster_error(ssn, error)
            return False
        found = find_feasible_nodes(ssn, task)
        if found.fit_errors is not None:
            job.nodes_fit_errors[task.uid] = found.fit_errors
            failed_classes.add(task.class_key)
            return False
        node = select_best_node(ssn, task, found.rows)
        if fits_idle(ssn, task, node):
            stmt.allocate(task, node)
        else:
            stmt.pipeline(task, node)
        return True


def _pending(job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks allocate places, by uid (best-effort tasks are left to backfill)."""
    return sorted((t for t in job.tasks_in(TaskStatus.PENDING) if not t.best_effort), key=lambda t: t.uid)


def _whole_cluster_error(ssn: Session, error: str) -> FitErrors:
    """A PrePredicate failure counts against every node (Volcano sets it on each)."""
    errors = FitErrors(nodes=len(ssn.nodes))
    errors.reasons[error] = len(ssn.nodes)
    return errors

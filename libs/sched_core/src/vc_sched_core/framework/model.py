"""Session bookkeeping for tasks, jobs and queues (Volcano's TaskInfo, JobInfo, QueueInfo).

Mutable on purpose: a session updates task statuses and job totals as statements run; the
snapshot it was built from stays frozen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgspec
import numpy as np

from vc_sched_core.framework.fit_errors import FitErrors
from vc_sched_core.framework.resources import Vector
from vc_sched_core.snapshot.cluster import PodGroupCondition, PodGroupObj, PodObj, QueueObj


class TaskStatus(StrEnum):
    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


ALLOCATED_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED})
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
SCHEDULED_STATUSES = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND, TaskStatus.FAILED, TaskStatus.SUCCEEDED})
COMPLETED_STATUSES = frozenset({TaskStatus.FAILED, TaskStatus.SUCCEEDED})
VALID_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED, TaskStatus.PENDING}


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class TaskInfo(msgspec.Struct, eq=False, gc=False):
    """A pod as a session schedules it. A msgspec Struct never tracked by the garbage collector: the
    carried session state holds one per pod (a million at the seeds' scale), and nothing a task holds
    (its pod, request vector, strings, status) refers back to it, so the cyclic collector has nothing
    to find there and its full collections skip them. Compared and hashed by identity."""

    uid: str
    name: str
    namespace: str
    job: str  # job uid ("<ns>/<podgroup>"), "" for pods of no job
    role: str  # volcano.sh/task-spec, "" when absent
    resreq: Vector
    best_effort: bool
    priority: int
    preemptable: bool
    status: TaskStatus
    pod: PodObj
    class_key: bytes  # tasks with equal keys share predicate and score work
    index: int | None  # the integer after the last "-" of the pod name (Volcano's default task order)
    node_name: str = ""
    preemption_policy: str = ""  # "Never": this task never evicts others (pod, else its PriorityClass)
    last_tx_status: TaskStatus | None = None  # status before the last discard (Volcano LastTransaction)
    # (class_key, request bytes): the tasks that share node answers (equivalence.py); set on first use.
    node_class: tuple[bytes, bytes] | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def clone(self) -> TaskInfo:
        """A fresh copy to mutate in a new session (`resreq` is shared: it is never written in place)."""
        return TaskInfo(
            self.uid, self.name, self.namespace, self.job, self.role, self.resreq, self.best_effort,
            self.priority, self.preemptable, self.status, self.pod, self.class_key, self.index,
            self.node_name, self.preemption_policy, self.last_tx_status, self.node_class,
        )  # fmt: skip


@dataclass(slots=True, eq=False)
class JobInfo:
    uid: str
    name: str
    namespace: str
    queue: str
    min_available: int
    task_min_available: dict[str, int]
    min_resources: Vector | None
    min_resources_dims: np.ndarray
    priority: int
    preemptable: bool
    podgroup: PodGroupObj
    phase: str
    allocated: Vector
    conditions: dict[str, PodGroupCondition] = field(default_factory=dict)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    by_status: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    nodes_fit_errors: dict[str, FitErrors] = field(default_factory=dict)
    job_fit_errors: str = ""
    # Actionable sentences beyond Volcano's message, by source ("enqueue", "allocate:<queue>"):
    # the latest check of a source replaces the earlier one, so numbers are never stale or repeated.
    why: dict[str, str] = field(default_factory=dict)
    # Values plugins derive from the job alone as a session opens (its tasks' request sums, its gang
    # validity, its reservation). While a job is carried unchanged between cycles (carried.py) it opens
    # the same every cycle, so each value is computed once per job instead of once per cycle; a job that
    # is built anew starts with none. Keyed "<plugin>.<what>".
    opening_memo: dict[str, Any] = field(default_factory=dict)
    # Kept up to date on every status change: job ordering asks for them thousands of times a cycle.
    _ready: int = 0
    _pending_best_effort: int = 0
    # Per role (task spec) of a job with minTaskMember: tasks by status, and pending best-effort ones,
    # so the per-role gang checks count roles instead of walking every task.
    _roles: dict[str, dict[TaskStatus, int]] = field(default_factory=dict)
    _roles_pending_best_effort: dict[str, int] = field(default_factory=dict)

    def reopen(self) -> None:
        """What a session writes on the job itself (phase, conditions, fit errors, explanations) back to
        how a build leaves it; the tasks' state is the session journal's to restore (carried.py)."""
        self.phase = self.podgroup.phase
        self.conditions = {c.type: c for c in self.podgroup.conditions}
        if self.nodes_fit_errors:
            self.nodes_fit_errors = {}
        if self.why:
            self.why = {}
        self.job_fit_errors = ""

    def _tally(self, task: TaskInfo, sign: int) -> None:
        status = task.status
        pending_best_effort = status == TaskStatus.PENDING and task.best_effort
        if status in READY_STATUSES:
            self._ready += sign
        elif pending_best_effort:
            self._pending_best_effort += sign
        if self.task_min_available:
            counts = self._roles.get(task.role)
            if counts is None:
                counts = self._roles[task.role] = {}
            counts[status] = counts.get(status, 0) + sign
            if pending_best_effort:
                roles = self._roles_pending_best_effort
                roles[task.role] = roles.get(task.role, 0) + sign

    def add_task(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.by_status.setdefault(task.status, {})[task.uid] = task
        self._tally(task, 1)
        if task.status in ALLOCATED_STATUSES:
            self.allocated += task.resreq

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        old = self.by_status.get(task.status)
        if old is not None:
            old.pop(task.uid, None)
            if not old:
                del self.by_status[task.status]
        self._tally(task, -1)
        was, task.status = task.status in ALLOCATED_STATUSES, status
        self._tally(task, 1)
        self.by_status.setdefault(status, {})[task.uid] = task
        now = status in ALLOCATED_STATUSES
        if now and not was:
            self.allocated += task.resreq
        elif was and not now:
            self.allocated -= task.resreq

    def count(self, *statuses: TaskStatus) -> int:
        by_status, total = self.by_status, 0
        for status in statuses:
            tasks = by_status.get(status)
            if tasks:
                total += len(tasks)
        return total

    def tasks_in(self, status: TaskStatus) -> list[TaskInfo]:
        return list(self.by_status.get(status, {}).values())

    def ready_task_num(self) -> int:
        return self._ready

    def waiting_task_num(self) -> int:
        return self.count(TaskStatus.PIPELINED)

    def pending_best_effort_num(self) -> int:
        return self._pending_best_effort

    def scheduled_task_num(self) -> int:
        """Volcano ScheduledTaskNum: Running, Bound, Failed and Succeeded tasks."""
        return self.count(*SCHEDULED_STATUSES)

    def releasing_scheduled_num(self) -> int:
        """Volcano ReleasingScheduledTaskNum: tasks being deleted that still hold a node (a pod deleted
        before it was placed does not count)."""
        releasing = self.by_status.get(TaskStatus.RELEASING)
        return sum(1 for t in releasing.values() if t.node_name) if releasing else 0

    def still_scheduled_while_terminating(self) -> bool:
        """Volcano shouldSkipUnschedulableForReleasing: a gang short of minMember ready tasks only
        because some of its pods are being deleted on their nodes, with nothing of it waiting to be
        placed, is not unschedulable: its scheduled plus terminating pods still meet minMember, so its
        PodGroup stays Running rather than Unknown while they go."""
        terminating = self.releasing_scheduled_num()
        if not terminating or self.count(TaskStatus.PENDING, TaskStatus.PIPELINED):
            return False
        return self.scheduled_task_num() + terminating >= self.min_available

    def valid_task_num(self) -> int:
        return self.count(*VALID_STATUSES)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_num() >= self.min_available

    def is_pending(self) -> bool:
        return self.phase in ("", PodGroupPhase.PENDING)

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < len(self.tasks)

    def task_min_total(self) -> int:
        return sum(self.task_min_available.values())

    def _roles_meeting(self, counted: frozenset[TaskStatus], *, best_effort_pending: bool) -> bool:
        """Every role with a minimum has that many tasks in `counted` (pending best-effort ones too when
        `best_effort_pending`; no counted set holds Pending, so none is counted twice)."""
        if not self.task_min_available or self.min_available < self.task_min_total():
            return True
        for role, need in self.task_min_available.items():
            counts = self._roles.get(role, {})
            occupied = sum(n for status, n in counts.items() if status in counted)
            if best_effort_pending:
                occupied += self._roles_pending_best_effort.get(role, 0)
            if occupied < need:
                return False
        return True

    def check_task_ready(self) -> bool:
        return self._roles_meeting(READY_STATUSES, best_effort_pending=True)

    def check_task_pipelined(self) -> bool:
        return self._roles_meeting(READY_STATUSES | {TaskStatus.PIPELINED}, best_effort_pending=True)

    def check_task_valid(self) -> bool:
        return self._roles_meeting(VALID_STATUSES, best_effort_pending=False)

    def need_continue_allocating(self) -> bool:
        """Volcano's NeedContinueAllocating: keep trying the job's other tasks after one found no node.

        Only a job needing every task stops at once. Otherwise the tasks left may still make the gang
        (a job without minTaskMember continues whatever failed, as its other tasks alone may meet
        minMember), unless a failed role is now sure to stay below its own minTaskMember."""
        if self.min_available == len(self.tasks):
            return False
        failed_roles = {self.tasks[uid].role for uid in self.nodes_fit_errors if uid in self.tasks}
        if self.min_available < self.task_min_total():
            usable = self.ready_task_num() + sum(
                1 for t in self.tasks_in(TaskStatus.PENDING) if t.role not in failed_roles
            )
            return usable >= self.min_available
        for role in failed_roles:
            need = self.task_min_available.get(role, 0)
            if need and self._role_occupied(role) < need:
                return False
        return True

    def _role_occupied(self, role: str) -> int:
        """Volcano getJobAllocatedRoles: the role's allocated and succeeded tasks."""
        occupied = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
        return sum(1 for t in self.tasks.values() if t.role == role and t.status in occupied)


@dataclass(slots=True, eq=False)
class QueueInfo:
    name: str
    weight: int
    spec: QueueObj

    @property
    def uid(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.spec.state in ("", "Open")

    def reclaimable(self) -> bool:
        return self.spec.reclaimable is not False

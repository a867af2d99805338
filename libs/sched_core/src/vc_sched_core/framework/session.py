"""One scheduling session: the cluster state, the plugins' functions per extension point, and one
generic tier walker that every dispatch method uses with Volcano's combination rule for that point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from vc_proto.vocabulary import PodGroupConditionType
from vc_sched_core.framework.conf import SchedulerConf, Tier
from vc_sched_core.framework.decisions import Bind, Evict
from vc_sched_core.framework.equivalence import EquivalenceCache
from vc_sched_core.framework.interfaces import (
    ALLOWED,
    Check,
    EventHandler,
    ExtensionPoint,
    NodeFailure,
    ValidateResult,
    Verdict,
    Vote,
)
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeInfo, NodeTable
from vc_sched_core.framework.resources import ResourceSpace, Vector
from vc_sched_core.snapshot.cluster import Outside, PodGroupCondition, PriorityClassObj
from vc_sched_core.snapshot.vgpu import VGPUDeviceFigures, VGPUPodFigures

if TYPE_CHECKING:
    from vc_sched_core.framework.carried import Journal

P = ExtensionPoint
Rows = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class OutsideQueue:
    """A queue's sums over the PodGroups outside the snapshot (cluster.QueueSums), as vectors."""

    request: Vector
    allocated: Vector
    reserved: Vector


@dataclass(slots=True)
class PredicateOutcome:
    """Rows that passed, and for the failed ones a histogram of first-failure reasons."""

    rows: Rows
    failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)


class Session:
    def __init__(
        self,
        *,
        uid: str,
        conf: SchedulerConf,
        space: ResourceSpace,
        nodes: NodeTable,
        jobs: dict[str, JobInfo],
        queues: dict[str, QueueInfo],
        priority_classes: Mapping[str, PriorityClassObj],
        now: datetime | None,
        journal: Journal | None = None,
    ) -> None:
        self.uid = uid
        # Carried objects (tasks, jobs, node rows) are recorded here before their first change, so the
        # state carried to the next cycle can be put back (carried.py); None: nothing is carried.
        self.journal = journal
        self.conf = conf
        self.tiers: tuple[Tier, ...] = conf.tiers
        self.space = space
        self.nodes = nodes
        self.jobs = jobs
        self.queues = queues
        self.priority_classes = priority_classes
        self.now = now
        self.total_resource: Vector = nodes.total_allocatable()
        # Usage of the nodes outside the snapshot, and per queue the sums of the PodGroups outside it
        # (take_outside); zero for a full snapshot.
        self.outside_used: Vector = space.zeros()
        self.outside_queues: dict[str, OutsideQueue] = {}
        self.invalid_jobs: dict[str, JobInfo] = {}
        self.decisions: list[Bind | Evict] = []
        # At most this many binds per session (None: no bound, Volcano's way): once they are decided,
        # allocate starts no further job, and the jobs it did not get to are `deferred` (cycle.py).
        self.bind_budget: int | None = None
        self.binds = 0
        self.deferred: set[str] = set()
        # Where a job's binds go as soon as the session will bind no more of it (release_binds), while
        # the session goes on; None: they are only in `decisions` at its end (cycle.py's `stream`).
        self.stream: Callable[[tuple[Bind, ...]], None] | None = None
        self._unreleased: dict[str, list[Bind]] = {}  # job uid -> its binds not yet streamed
        # Per task uid, annotations its bind carries (plugins merge them when they allocate a device,
        # delete them when the task is deallocated; Volcano's TaskInfo.PodAnnotations).
        self.bind_annotations: dict[str, dict[str, str]] = {}
        # Per queue, what plugins add to the allocation its status reports (deviceshare: the device
        # memory and cores pods hold instead of their requests; Volcano's AddQueueResource).
        self.queue_allocated_extra: dict[str, Vector] = {}
        self.next_start_row = 0  # round-robin start of the feasible-node search (Volcano ph offset)
        self.recheck_at: datetime | None = None  # see recheck_by
        self._jobs_by_uid: list[JobInfo] | None = None
        # Whether some pod in the cluster has inter-pod (anti-)affinity or topology spread (carried.relates),
        # as the opening counted it; None when the session was not opened that way (plugins look).
        self.pods_relate: bool | None = None
        self._fns: dict[P, dict[str, Callable[..., Any]]] = {p: {} for p in P}
        self._node_local: set[tuple[P, str]] = set()
        self._parts: dict[str, list[str]] = {}  # plugin -> keys of its further functions (add_fn part)
        self._tier_cache: dict[P, list[list[Callable[..., Any]]]] = {}  # the walker's answer per point
        self._flat_cache: dict[P, list[Callable[..., Any]]] = {}
        self._handlers: list[EventHandler] = []
        self.equivalence = EquivalenceCache(self)  # node answers shared by the tasks of one class
        # What Volcano's plugins and helpers report to Prometheus, for the service to export: per task,
        # the seconds of its feasible-node search ("Predicate") and best-node choice ("Scoring"); drf's
        # dominant share per job uid at session close; the uids of the jobs gang left unready;
        # deviceshare's GPUs at session close, per (UUID, node) and per (UUID, node, pod name).
        self.stage_durations: dict[str, list[float]] = {"Predicate": [], "Scoring": []}
        self.job_shares: dict[str, float] = {}
        self.retried_jobs: list[str] = []
        self.vgpu_devices: dict[tuple[str, str], VGPUDeviceFigures] = {}
        self.vgpu_pods: dict[tuple[str, str, str], VGPUPodFigures] = {}

    def take_outside(self, outside: Outside) -> None:
        """Count what a partial snapshot leaves out (cluster.Outside) in the session's whole-cluster
        figures: the total allocatable, the nodes' usage, each queue's sums."""
        space = self.space
        self.total_resource = self.total_resource + space.vector(outside.allocatable)
        self.outside_used = space.vector(outside.used)
        self.outside_queues = {
            name: OutsideQueue(space.vector(s.request), space.vector(s.allocated), space.vector(s.reserved))
            for name, s in outside.queues.items()
        }

    # -- registration (plugins call these from on_session_open) -----------------------------------

    def add_fn(
        self, point: P, plugin: str, fn: Callable[..., Any], *, node_local: bool = False, part: str = ""
    ) -> None:
        """Register `fn` for `point`. For predicates and scores, `node_local` promises that the answer for
        a node depends only on the task's class (its `class_key` and request) and on that node's own
        state, so the session may reuse it for every task of the class until that node changes (see
        equivalence.py). A `part` registers a further function of the same plugin (walked right after
        its main one and switched with it), so a plugin can split node-local checks from the rest."""
        key = f"{plugin}#{part}" if part else plugin
        if part and key not in self._fns[point]:
            self._parts.setdefault(plugin, []).append(key)
        self._fns[point][key] = fn
        if node_local:
            self._node_local.add((point, key))
        else:
            self._node_local.discard((point, key))
        self._tier_cache.pop(point, None)
        self._flat_cache.pop(point, None)

    def add_event_handler(self, handler: EventHandler) -> None:
        self._handlers.append(handler)

    def jobs_by_uid(self) -> list[JobInfo]:
        """The session's jobs sorted by uid, the order every action walks them in; sorted once (the job
        set is fixed once the session is open: actions change jobs, never which jobs there are)."""
        if self._jobs_by_uid is None or len(self._jobs_by_uid) != len(self.jobs):
            self._jobs_by_uid = sorted(self.jobs.values(), key=lambda j: j.uid)
        return self._jobs_by_uid

    def recheck_by(self, when: datetime) -> None:
        """A plugin's word that time alone may change a decision at `when` (an SLA deadline passing): a
        caller that skips sessions while nothing changes must run one by then."""
        if self.recheck_at is None or when < self.recheck_at:
            self.recheck_at = when

    def action_enabled(self, name: str) -> bool:
        return name in self.conf.actions

    # -- the one tier walker ------------------------------------------------------------------------

    def tiers_of(self, point: P) -> list[list[Callable[..., Any]]]:
        """Per tier, the functions registered for `point` by plugins that enable it, in conf order.

        Computed once per point (registration happens at session open; the hot path only reads).
        """
        cached = self._tier_cache.get(point)
        if cached is None:
            table = self._fns[point]
            cached = [
                [table[key] for p in tier.plugins if p.enabled(point) for key in self._keys(table, p.name)]
                for tier in self.tiers
            ]
            self._tier_cache[point] = cached
        return cached

    def fns(self, point: P) -> list[Callable[..., Any]]:
        """Every function of `point` in walking order (tier by tier)."""
        flat = self._flat_cache.get(point)
        if flat is None:
            flat = self._flat_cache[point] = [fn for tier_fns in self.tiers_of(point) for fn in tier_fns]
        return flat

    def _keys(self, table: Mapping[str, Callable[..., Any]], plugin: str) -> list[str]:
        """The registered keys of `plugin` in `table`: its main function, then its parts."""
        parts = self._parts.get(plugin)
        keys = [plugin, *parts] if parts else [plugin]
        return [key for key in keys if key in table]

    def _enabled_plugins(self, point: P) -> list[str]:
        table = self._fns[point]
        plugins = [p for tier in self.tiers for p in tier.plugins if p.enabled(point)]
        return [key for p in plugins for key in self._keys(table, p.name)]

    def predicates_by_locality(self) -> tuple[list[Callable[..., Any]], list[Callable[..., Any]]]:
        """(node-local, other) predicate functions."""
        names = self._enabled_plugins(P.PREDICATE)
        table = self._fns[P.PREDICATE]
        local = [table[n] for n in names if (P.PREDICATE, n) in self._node_local]
        return local, [table[n] for n in names if (P.PREDICATE, n) not in self._node_local]

    def scores_by_locality(self) -> tuple[list[Callable[..., Any]], list[Callable[..., Any]]]:
        """The score functions in `node_scores` order, split after the longest node-local prefix."""
        ordered = [
            (point, name) for point in (P.NODE_ORDER, P.BATCH_NODE_ORDER) for name in self._enabled_plugins(point)
        ]
        split = next((i for i, key in enumerate(ordered) if key not in self._node_local), len(ordered))
        fns = [self._fns[point][name] for point, name in ordered]
        return fns[:split], fns[split:]

    # -- orderings: first non-zero comparison wins, then Volcano's fallbacks --------------------------

    def _compare(self, point: P, left: object, right: object) -> int:
        for fn in self.fns(point):
            result: int = fn(left, right)
            if result != 0:
                return result
        return 0

    def job_order(self, left: JobInfo, right: JobInfo) -> bool:
        result = self._compare(P.JOB_ORDER, left, right)
        if result != 0:
            return result < 0
        return (left.podgroup.creation, left.uid) < (right.podgroup.creation, right.uid)

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> bool:
        result = self._compare(P.QUEUE_ORDER, left, right)
        if result != 0:
            return result < 0
        return (left.spec.creation, left.name) < (right.spec.creation, right.name)

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> bool:
        for fn in self.fns(P.VICTIM_QUEUE_ORDER):
            result: int = fn(left, right, preemptor)
            if result != 0:
                return result < 0
        return not self.queue_order(left, right)

    def task_order(self, left: TaskInfo, right: TaskInfo) -> bool:
        result = self._compare(P.TASK_ORDER, left, right)
        if result != 0:
            return result < 0
        if left.index is not None and right.index is not None and left.index != right.index:
            return left.index < right.index
        return (left.pod.creation, left.uid) < (right.pod.creation, right.uid)

    # -- predicates and scores (vectorised over node rows) ---------------------------------------------

    def pre_predicate(self, task: TaskInfo) -> str | None:
        for fn in self.fns(P.PRE_PREDICATE):
            error: str | None = fn(task)
            if error:
                return error
        return None

    def predicate(self, task: TaskInfo, rows: Rows, *, resolvable_pass: bool = False) -> PredicateOutcome:
        """All plugins must pass; each failed node counts its first failing reason.

        `resolvable_pass` is Volcano's PredicateForPreemptAction: only unresolvable failures count.
        """
        outcome = PredicateOutcome(rows)
        for fn in self.fns(P.PREDICATE):
            if len(outcome.rows) == 0:
                break
            failing = np.zeros(len(outcome.rows), dtype=bool)
            failure: NodeFailure
            for failure in fn(task, outcome.rows):
                if resolvable_pass and failure.resolvable:
                    continue
                fresh = failure.mask & ~failing
                if fresh.any():
                    outcome.reasons[failure.reason] += int(fresh.sum())
                    failing |= fresh
            outcome.failed += int(failing.sum())
            outcome.rows = outcome.rows[~failing]
        return outcome

    def node_scores(self, task: TaskInfo, rows: Rows) -> NDArray[np.float64]:
        """Sum of every NodeOrder and BatchNodeOrder score (Volcano PrioritizeNodes)."""
        scores = np.zeros(len(rows), dtype=np.float64)
        for point in (P.NODE_ORDER, P.BATCH_NODE_ORDER):
            for fn in self.fns(point):
                scores += fn(task, rows)
        return scores

    # -- victims: intersect within a tier; the first tier with a decision wins ---------------------------

    def _victims(self, point: P, actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        for tier_fns in self.tiers_of(point):
            victims: list[TaskInfo] | None = None
            for fn in tier_fns:
                chosen: list[TaskInfo] | None = fn(actor, candidates)
                if chosen is None:  # abstain
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = chosen
                else:
                    keep = {id(task) for task in chosen}
                    victims = [v for v in victims if id(v) in keep]
            if victims is not None:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._victims(P.PREEMPTABLE, preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._victims(P.RECLAIMABLE, reclaimer, candidates)

    def victim_tasks(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Union within a tier; the first tier with victims wins."""
        for tier_fns in self.tiers_of(P.VICTIM_TASKS):
            chosen: dict[str, TaskInfo] = {}
            for fn in tier_fns:
                chosen.update((t.uid, t) for t in fn(tasks))
            if chosen:
                return list(chosen.values())
        return []

    # -- job and queue questions --------------------------------------------------------------------------

    def job_valid(self, job: JobInfo) -> ValidateResult | None:
        for fn in self._fns[P.JOB_VALID].values():  # not switchable in Volcano
            result: ValidateResult | None = fn(job)
            if result is not None and not result.passed:
                return result
        return None

    def _all(self, point: P, *args: object) -> bool:
        return all(fn(*args) for fn in self.fns(point))

    def job_ready(self, job: JobInfo) -> bool:
        return self._all(P.JOB_READY, job)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self._all(P.PREEMPTIVE, queue, task)

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self.fns(P.OVERUSED))

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Check:
        for fn in self.fns(P.ALLOCATABLE):
            check: Check = fn(queue, task)
            if not check.ok:
                return check
        return ALLOWED

    def _vote(self, point: P, job: JobInfo) -> Verdict:
        """Any Reject rejects; a Permit decides at the end of its tier; no Permit anywhere permits."""
        for tier_fns in self.tiers_of(point):
            permitted = False
            for fn in tier_fns:
                verdict: Verdict = fn(job)
                if verdict.vote == Vote.REJECT:
                    return verdict
                permitted |= verdict.vote == Vote.PERMIT
            if permitted:
                return Verdict(Vote.PERMIT)
        return Verdict(Vote.PERMIT)

    def job_enqueueable(self, job: JobInfo) -> Verdict:
        return self._vote(P.JOB_ENQUEUEABLE, job)

    def enqueue_rejections(self, job: JobInfo) -> list[str]:
        """The reason of every plugin that rejects the job, not only the first: a user should learn of
        every rule that holds the job back at once (asked only for a job already rejected)."""
        reasons = []
        for fn in self.fns(P.JOB_ENQUEUEABLE):
            verdict: Verdict = fn(job)
            if verdict.vote == Vote.REJECT and verdict.reason and verdict.reason not in reasons:
                reasons.append(verdict.reason)
        return reasons

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._vote(P.JOB_PIPELINED, job).vote == Vote.PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        for fn in self.fns(P.JOB_ENQUEUED):
            fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """Within a tier all registered must agree; the first tier with any decides; none: False."""
        for tier_fns in self.tiers_of(P.JOB_STARVING):
            if tier_fns:
                return all(fn(job) for fn in tier_fns)
        return False

    # -- state changes (Statement uses the underscored ones) -------------------------------------------

    def node_of(self, task: TaskInfo) -> NodeInfo | None:
        return self.nodes.by_name.get(task.node_name) if task.node_name else None

    def set_task(self, task: TaskInfo, status: TaskStatus, node_name: str) -> None:
        """Move a task to `status` on `node_name` ("" = no node), keeping node and job totals right."""
        old_node = self.node_of(task)
        job = self.jobs.get(task.job)
        new_node = self.nodes.by_name.get(node_name) if node_name else None
        journal = self.journal
        if journal is not None:
            journal.task(task)
            if job is not None:
                journal.job(job)
            for node in (old_node, new_node):
                if node is not None:
                    journal.row(node)
        # Staying on its node in a status its accounts treat alike (Allocated -> Binding: every bind a
        # session dispatches) leaves the node as it was: no remove and add of the same amounts, and no
        # change for the per-class node answers to recompute.
        stays = old_node is not None and old_node is new_node and _accounted_alike(task.status, status)
        if old_node is not None and not stays:
            self.nodes.remove_task(old_node, task)
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status
        task.node_name = node_name
        if new_node is not None and not stays:
            self.nodes.add_task(new_node, task)

    def mark_last_transaction(self, task: TaskInfo) -> None:
        """Remember the task's status before a statement undoes it (Volcano's LastTransaction)."""
        if self.journal is not None:
            self.journal.task(task)
        task.last_tx_status = task.status

    def fire_allocate(self, task: TaskInfo) -> None:
        for handler in self._handlers:
            if handler.allocate is not None:
                handler.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for handler in self._handlers:
            if handler.deallocate is not None:
                handler.deallocate(task)

    def dispatch(self, task: TaskInfo) -> None:
        """Hand an allocated task to the binder: status Binding and a Bind decision."""
        self.set_task(task, TaskStatus.BINDING, task.node_name)
        annotations = self.bind_annotations.get(task.uid)
        carried = tuple(sorted(annotations.items())) if annotations else ()
        bind = Bind(task.key, task.pod.uid, task.node_name, carried)
        self.decisions.append(bind)
        self.binds += 1
        if self.stream is not None:
            self._unreleased.setdefault(task.job, []).append(bind)

    def release_binds(self, job: JobInfo) -> None:
        """Hand the job's binds so far to `stream` once this session will bind no more of it: no task of
        the job is left pending (the later actions bind pending tasks only; a pipelined one waits for a
        later session). The binder commits a gang all or nothing, so a job's binds of one session must
        reach it together: a job that still has pending tasks keeps its binds until the session ends."""
        if self.stream is None or job.by_status.get(TaskStatus.PENDING):
            return
        binds = self._unreleased.pop(job.uid, None)
        if binds:
            self.stream(tuple(binds))

    def budget_spent(self) -> bool:
        """Whether the session decided as many binds as its `bind_budget` allows."""
        return self.bind_budget is not None and self.binds >= self.bind_budget

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Volcano ssn.Allocate: allocate now, bind the job's allocated tasks once it is ready."""
        self.set_task(task, TaskStatus.ALLOCATED, node.name)
        self.fire_allocate(task)
        job = self.jobs[task.job]
        if self.job_ready(job):
            for ready in sorted(job.tasks_in(TaskStatus.ALLOCATED), key=lambda t: t.uid):
                self.dispatch(ready)

    def evict(self, task: TaskInfo, reason: str) -> None:
        """Volcano ssn.Evict: release now and emit the eviction."""
        self.set_task(task, TaskStatus.RELEASING, task.node_name)
        self.fire_deallocate(task)
        self.decisions.append(Evict(task.key, task.pod.uid, reason))

    def update_podgroup_condition(self, job: JobInfo, condition: PodGroupCondition) -> None:
        job.conditions[condition.type] = condition

    def mark_invalid(self, job: JobInfo, result: ValidateResult) -> None:
        """The Unschedulable condition of a job failing JobValid: its reason and message as they are."""
        condition = PodGroupCondition(
            PodGroupConditionType.UNSCHEDULABLE, "True", result.reason, result.message, self.uid
        )
        self.update_podgroup_condition(job, condition)

    def queue_of(self, job: JobInfo) -> QueueInfo | None:
        return self.queues.get(job.queue)

    def add_queue_allocated(self, queue: str, amount: Vector) -> None:
        """Add `amount` to what the queue's status reports allocated (not to any quota check)."""
        held = self.queue_allocated_extra.get(queue)
        self.queue_allocated_extra[queue] = amount.copy() if held is None else held + amount


def _accounted_alike(left: TaskStatus, right: TaskStatus) -> bool:
    """Whether a node's accounts hold a task the same way in both statuses (nodes.py: Releasing and
    Pipelined each move their own accounts; every other status on a node counts as placed)."""
    return (left == TaskStatus.RELEASING, left == TaskStatus.PIPELINED) == (
        right == TaskStatus.RELEASING,
        right == TaskStatus.PIPELINED,
    )

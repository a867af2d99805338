"""The state a session opens on, carried from one cycle to the next (the scheduler's live path).

A session opens on the node table (every placed task accounted on its node), the jobs (a JobInfo per
PodGroup with its tasks) and the resource space. Building them touches every pod, yet on a busy
cluster nearly every pod is the very object it was in the previous cycle's snapshot (the scheduler's
cache replaces an object only when it changes). So the state keeps what it built, and on the next
snapshot rebuilds only what changed:

- a job whose PodGroup changed, or any of whose pods came, went or changed, is rebuilt whole, its
  tasks in snapshot order; the task of a pod that only moved on (bound, started, finished, leaving)
  is its previous task with the new status, node and pod, not built again;
- so is the accounting of each node row one of whose tasks went or changed, and of each node whose
  object changed; a task that newly lands on a row after all of the row's tasks in snapshot order (a
  bind: pods are created, so ordered, before they are bound) is added to the row as it is, and one
  that stays on its row accounted alike (Bound to Running) is swapped in where it stands, as long as
  either gives the floats and dict orders a rebuild gives (_RowChanges). A busy cluster's binds touch
  nearly every node each cycle: rebuilding those rows re-added every running pod;
- everything else is the previous cycle's objects, as they were before that session ran: the session
  journals each task, job and node row before it first changes it, and `close` puts them back; what
  a session writes on a job itself (phase, conditions, fit errors) is reset from its PodGroup.

A rebuild runs exactly the steps a full build runs, in the same order, so the floats and the dict
orders come out the same: a session on carried state decides exactly what a session on a fresh build
decides (property-tested). What cannot be patched in order (the resource names, priority classes,
scheduler names or node list changing, pods reordered, duplicate keys) falls back to a full build.
Costs per cycle: a pass over the PodGroups comparing identities, a reset per job, and a rebuild per
change. The pods are compared in NumPy by the order the scheduler's cache gives them (pod_order.py);
a snapshot not listed by that order is compared pod by pod. The caller may also bring the state to a
snapshot between sessions (`prepare`), so that the next opening patches only what changed after it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter

import msgspec
import numpy as np

from vc_core.interning import shared
from vc_sched_core.framework import pod_order
from vc_sched_core.framework.build import (
    OCCUPYING_PHASES,
    RequestVectors,
    build_job,
    build_queues,
    build_task,
    task_status,
)
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeInfo, NodeTable
from vc_sched_core.framework.pod_order import PodOrder
from vc_sched_core.framework.resources import ResourceSpace, Vector
from vc_sched_core.snapshot.cluster import ClusterSnapshot, NodeObj, PodGroupObj, PodObj, PriorityClassObj

_DONE = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)
_order_of = attrgetter("order")


class _RowChanges:
    """How the node rows take the pods that changed or came (CarriedState._apply): rows to rebuild,
    tasks to append, tasks to swap in place."""

    def __init__(self) -> None:
        self.rebuild: set[int] = set()
        self.appended: dict[int, list[_Pod]] = {}
        self.swapped: list[tuple[int, TaskInfo]] = []

    def settle(self, entry: _Pod, old_row: int, old_task: TaskInfo | None) -> None:
        """A pod on the same row, accounted alike with the same requests (Bound to Running), leaves the
        row's accounts as they are; one that newly lands on a row may be appended; any other change
        rebuilds the rows it left and joined."""
        row, task = entry.row, entry.task
        if row >= 0 and task is not None and _plain(task):
            if old_row < 0:
                self.appended.setdefault(row, []).append(entry)
                return
            if old_row == row and old_task is not None and _plain(old_task):
                # (A task that moved on keeps its request vector: the same object, no comparing.)
                if old_task.resreq is task.resreq or np.array_equal(old_task.resreq, task.resreq):
                    self.swapped.append((row, task))
                    return
        if old_row >= 0:
            self.rebuild.add(old_row)
        if row >= 0:
            self.rebuild.add(row)


def _plain(task: TaskInfo) -> bool:
    """Accounted as using its node (the build adds releasing and pipelined tasks after these)."""
    return task.status is not TaskStatus.RELEASING and task.status is not TaskStatus.PIPELINED


def _holds_unplain(table: NodeTable, row: int) -> bool:
    """Whether the row accounts a releasing or pipelined task that asks for anything (requests are never
    negative, so zero sums mean none, or only ones whose order cannot change a float)."""
    return bool(table.releasing[row].any() or table.pipelined[row].any())


@dataclass(frozen=True, slots=True)
class Opening:
    """What a session opens on."""

    space: ResourceSpace
    nodes: NodeTable
    queues: dict[str, QueueInfo]
    classes: dict[str, PriorityClassObj]
    jobs: dict[str, JobInfo]  # PodGroups whose queue exists, in snapshot order
    pods_relate: bool = True  # some pod has inter-pod (anti-)affinity terms or topology spread (see relates)


class _Pod(msgspec.Struct, eq=False, gc=False):
    """A pod of the last snapshot and what the build made of it (one per pod, never tracked by the
    garbage collector: it refers to its pod and task only, neither of which refers back)."""

    pod: PodObj
    position: int  # its place in the last snapshot: its pod's order (pods listed by order), else its index
    group: str  # "<namespace>/<group>" when the pod is ours and names a group, else ""
    task: TaskInfo | None = None  # None: the session does not see it
    row: int = -1  # the node row it is accounted on, -1 when none
    seen: int = 0  # the opening that last saw it


class Journal:
    """Carried objects as they were before a session first changed them; `restore` puts them back."""

    def __init__(self, table: NodeTable) -> None:
        self._table = table
        self._tasks: dict[int, tuple[TaskInfo, TaskStatus, str, TaskStatus | None]] = {}
        self._jobs: dict[int, tuple[JobInfo, dict[TaskStatus, dict[str, TaskInfo]], tuple[object, ...], Vector]] = {}
        self._rows: dict[int, tuple[NodeInfo, np.ndarray, float, dict[str, TaskInfo]]] = {}

    def task(self, task: TaskInfo) -> None:
        if id(task) not in self._tasks:
            self._tasks[id(task)] = (task, task.status, task.node_name, task.last_tx_status)

    def job(self, job: JobInfo) -> None:
        if id(job) not in self._jobs:
            by_status = {status: dict(tasks) for status, tasks in job.by_status.items()}
            tallies = (
                job._ready,
                job._pending_best_effort,
                {role: dict(counts) for role, counts in job._roles.items()},
                dict(job._roles_pending_best_effort),
            )
            self._jobs[id(job)] = (job, by_status, tallies, job.allocated.copy())

    def row(self, node: NodeInfo) -> None:
        if node.row not in self._rows:
            table, row = self._table, node.row
            self._rows[row] = (node, table.account_row(row), float(table.pod_count[row]), dict(node.tasks))

    def touched(self, job: JobInfo) -> bool:
        """Whether the session changed one of the job's tasks."""
        return id(job) in self._jobs

    def restore(self) -> None:
        for task, status, node_name, last_tx in self._tasks.values():
            task.status, task.node_name, task.last_tx_status = status, node_name, last_tx
        for job, by_status, tallies, allocated in self._jobs.values():
            job.by_status, job.allocated = by_status, allocated
            job._ready, job._pending_best_effort, job._roles, job._roles_pending_best_effort = tallies  # type: ignore[assignment]
        for row, (node, accounts, pods, tasks) in self._rows.items():
            self._table.set_account_row(row, accounts, pods)
            node.tasks = tasks
        self._tasks, self._jobs, self._rows = {}, {}, {}


class CarriedState:
    """Builds what a session opens on, and patches it to the next snapshot (see the module doc).

    Held by the caller between cycles (the scheduler loop); `opening` before the session, `close` after.
    A state created for one session only (`keep=False`) journals nothing.
    """

    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self._opens = 0  # how many times the state was brought to a snapshot (stamps the pods each saw)
        self._context: object = None  # priority classes and scheduler names the state was built for
        self._carriable = False  # the last build can be patched (no duplicate keys)
        self._space: ResourceSpace | None = None
        self._classes: dict[str, PriorityClassObj] = {}
        self._ours: frozenset[str] = frozenset()
        self._vectors: RequestVectors | None = None
        self._table: NodeTable | None = None
        self._nodes: Sequence[NodeObj] = ()
        self._pods: dict[str, _Pod] = {}
        # The last snapshot's pods by their orders, while they strictly increase (pod_order.py): an
        # entry's position is then its pod's order, and the next opening finds what changed in NumPy.
        self._order: PodOrder | None = None
        self._groups: dict[str, dict[str, _Pod]] = {}  # group key -> its pods (ours, naming it)
        self._rows: list[dict[str, _Pod]] = []  # node row -> the pods accounted on it
        self._tails: list[_Pod | None] = []  # node row -> its pod last in snapshot order (None: empty)
        self._pgs: dict[str, PodGroupObj] = {}
        self._jobs: dict[str, JobInfo] = {}  # PodGroup key -> job (PodGroups whose queue exists)
        self._queue_names: frozenset[str] = frozenset()
        self._names: Counter[str] = Counter()  # resource names of nodes, pods and PodGroups
        self._relating = 0  # pods whose placement depends on other pods' (relates), counted as they change
        self._journal: Journal | None = None
        self.rebuilt = (0, 0)  # jobs and node rows the last opening rebuilt (for tests and metrics)
        # The PodGroup keys whose jobs were built anew since statuses were last reported (None: all of
        # them, after a full build): run_cycle reports these even when told to leave unchanged ones out.
        self.unreported: set[str] | None = None

    # -- the session's side -------------------------------------------------------------------------

    def opening(self, snapshot: ClusterSnapshot, scheduler_names: Iterable[str]) -> tuple[Opening, Journal | None]:
        """What the next session opens on, and the journal it must record its changes in."""
        classes, queues = self._bring_to(snapshot, scheduler_names)
        assert self._space is not None and self._table is not None
        self._table.changes = []
        jobs = {pg.key: self._jobs[pg.key] for pg in snapshot.podgroups if pg.key in self._jobs}
        for job in jobs.values():
            job.reopen()
        if self.keep:
            self._journal = Journal(self._table)
        return Opening(self._space, self._table, queues, classes, jobs, self._relating > 0), self._journal

    def prepare(self, snapshot: ClusterSnapshot, scheduler_names: Iterable[str]) -> None:
        """Bring the state to `snapshot` between sessions: the next opening then patches only what changed
        after it. Most of what an opening patches is the last session's own decisions (its binds, as the
        cache assumes them); brought in while they are being written, they no longer hold the next
        session up (at the seeds' scale an opening lasted 8-14 s, and the binds stopped meanwhile:
        docs/benchmarks.md). The state after `prepare` and `opening` is what `opening` alone makes."""
        self._bring_to(snapshot, scheduler_names)

    def _bring_to(
        self, snapshot: ClusterSnapshot, scheduler_names: Iterable[str]
    ) -> tuple[dict[str, PriorityClassObj], dict[str, QueueInfo]]:
        """The last session's changes put back, then the state patched (or built) to `snapshot`; the
        snapshot's priority classes and queues."""
        self.close()
        self._opens += 1
        classes = {pc.name: pc for pc in snapshot.priority_classes}
        ours = frozenset(scheduler_names)
        queues = build_queues(snapshot)
        context = (tuple(sorted(classes.items())), ours)
        if context != self._context or not self._patch(snapshot, queues):
            self._context = context
            self._build(snapshot, queues, classes, ours)
        return classes, queues

    def reported(self, again: Iterable[str] = ()) -> None:
        """A cycle reported every status that could have changed: count rebuilt jobs from here, with
        `again` (statuses that hold only for the session that reported them) reported next cycle too."""
        self.unreported = set(again)

    def close(self) -> None:
        """Put back what the last session changed (also after a session that raised half-way)."""
        if self._journal is not None:
            self._journal.restore()
            self._journal = None

    # -- full build ---------------------------------------------------------------------------------

    def _build(
        self,
        snapshot: ClusterSnapshot,
        queues: Mapping[str, QueueInfo],
        classes: dict[str, PriorityClassObj],
        ours: frozenset[str],
    ) -> None:
        """Everything anew: the steps of build.build_jobs_and_tasks, remembering what came of each pod."""
        self._names = _names_of(snapshot)
        space = self._space = ResourceSpace.of(_space_names(self._names, snapshot))
        self._classes, self._ours, self._vectors = classes, ours, RequestVectors(space)
        table = self._table = NodeTable(space, snapshot.nodes)
        self._nodes = snapshot.nodes
        self._pgs = {pg.key: pg for pg in snapshot.podgroups}
        jobs = self._jobs = {pg.key: self._new_job(pg) for pg in snapshot.podgroups if pg.queue in queues}
        self._queue_names = frozenset(queues)
        self._pods, self._groups = {}, {}
        self._rows = [{} for _ in table.nodes]
        self._tails = [None for _ in table.nodes]
        self._relating = sum(1 for pod in snapshot.pods if relates(pod))
        carriable = len(self._pgs) == len(snapshot.podgroups)
        placed: list[tuple[NodeInfo, TaskInfo]] = []
        self._order = PodOrder.of(snapshot.pods)
        positions = _positions(snapshot.pods, by_order=self._order is not None)
        for position, pod in zip(positions, snapshot.pods, strict=True):
            entry = _Pod(pod, position, self._group_of(pod), seen=self._opens)
            carriable &= self._pods.setdefault(pod.uid, entry) is entry
            if entry.group:
                self._groups.setdefault(entry.group, {})[pod.uid] = entry
            job = jobs.get(entry.group) if entry.group else None
            self._derive(entry, job)
            if entry.task is not None and job is not None:
                job.add_task(entry.task)
            if entry.row >= 0 and entry.task is not None:
                placed.append((table.nodes[entry.row], entry.task))
                self._rows[entry.row][pod.uid] = entry
                self._tails[entry.row] = entry
        table.add_tasks(placed)
        self._carriable = carriable
        self.rebuilt = (len(jobs), len(table))
        self.unreported = None

    # -- patch --------------------------------------------------------------------------------------

    def _patch(self, snapshot: ClusterSnapshot, queues: Mapping[str, QueueInfo]) -> bool:
        """Bring the state to `snapshot` by rebuilding what changed; False when only a full build can."""
        if not self._carriable or self._table is None or self._space is None:
            return False
        changed_rows = self._changed_nodes(snapshot.nodes)
        pgs = self._changed_podgroups(snapshot.podgroups)
        pods = self._changed_pods(snapshot.pods)
        if changed_rows is None or pgs is None or pods is None:
            return False
        new_pgs, changed_pgs, removed_pgs = pgs
        changed, added, removed = pods
        names = self._names
        for row in changed_rows:
            names.subtract(self._nodes[row].allocatable.keys())
            names.update(snapshot.nodes[row].allocatable.keys())
        for key in changed_pgs:
            old = self._pgs.get(key)
            if old is not None:
                names.subtract((old.min_resources or {}).keys())
            names.update((new_pgs[key].min_resources or {}).keys())
        for key in removed_pgs:
            names.subtract((self._pgs[key].min_resources or {}).keys())
        for entry, pod in changed:
            names.subtract(entry.pod.requests.keys())
            names.update(pod.requests.keys())
        for pod, _ in added:
            names.update(pod.requests.keys())
        for entry in removed:
            names.subtract(entry.pod.requests.keys())
        if _space_names(names, snapshot) != self._space.names:
            return False
        self._apply(snapshot, queues, changed_rows, new_pgs, changed_pgs | removed_pgs, changed, added, removed)
        return True

    def _changed_nodes(self, nodes: Sequence[NodeObj]) -> list[int] | None:
        """Rows whose node object changed; None when the node list itself changed."""
        if len(nodes) != len(self._nodes):
            return None
        changed = []
        for row, (new, old) in enumerate(zip(nodes, self._nodes, strict=True)):
            if new is not old:
                if new.name != old.name:
                    return None
                changed.append(row)
        return changed

    def _changed_podgroups(
        self, podgroups: Sequence[PodGroupObj]
    ) -> tuple[dict[str, PodGroupObj], set[str], set[str]] | None:
        """The new PodGroups by key, the keys that are new or changed, the keys gone; None on duplicates."""
        new = {pg.key: pg for pg in podgroups}
        if len(new) != len(podgroups):
            return None
        old = self._pgs
        changed = {key for key, pg in new.items() if old.get(key) is not pg}
        kept = len(new) - sum(1 for key in changed if key not in old)  # keys in both snapshots
        removed = set(old) - new.keys() if kept != len(old) else set()
        return new, changed, removed

    def _changed_pods(
        self, pods: Sequence[PodObj]
    ) -> tuple[list[tuple[_Pod, PodObj]], list[tuple[PodObj, int]], list[_Pod]] | None:
        """(entry, new object) of changed pods, (pod, position) of new ones, entries of pods gone; every
        surviving entry gets its new position. None when pods were reordered or a uid repeats."""
        before, after = self._order, PodOrder.of(pods)
        self._order = after
        if before is not None and after is not None:
            return self._changed_by_order(before, after)
        positions = _positions(pods, by_order=after is not None)
        return self._walk(pods, positions)

    def _changed_by_order(
        self, before: PodOrder, after: PodOrder
    ) -> tuple[list[tuple[_Pod, PodObj]], list[tuple[PodObj, int]], list[_Pod]] | None:
        """`_changed_pods` when both snapshots' pods are by order: positions are orders, so only the pods
        that changed, came or went are looked at. None when a uid repeats."""
        found = pod_order.changes(before, after)
        entries = self._pods
        removed = [entries[pod.uid] for pod in found.removed]
        gone = {pod.uid for pod in found.removed}
        added: list[tuple[PodObj, int]] = []
        for pod in found.added:
            if pod.uid in entries and pod.uid not in gone:
                return None  # the same uid as a pod that stays
            added.append((pod, pod.order))
        if len({pod.uid for pod, _ in added}) != len(added):
            return None
        return [(entries[old.uid], new) for old, new in found.changed], added, removed

    def _walk(
        self, pods: Sequence[PodObj], positions: Iterable[int]
    ) -> tuple[list[tuple[_Pod, PodObj]], list[tuple[PodObj, int]], list[_Pod]] | None:
        """`_changed_pods` by looking at every pod."""
        stamp = self._opens
        entries = self._pods
        changed: list[tuple[_Pod, PodObj]] = []
        added: list[tuple[PodObj, int]] = []
        last = -1
        for position, pod in zip(positions, pods, strict=True):
            entry = entries.get(pod.uid)
            if entry is None:
                added.append((pod, position))
                continue
            if entry.seen == stamp or entry.position < last:
                return None  # the same uid twice, or pods in another order than before
            last, entry.position, entry.seen = entry.position, position, stamp
            if entry.pod is not pod:
                changed.append((entry, pod))
        if len({pod.uid for pod, _ in added}) != len(added):
            return None
        survivors = len(pods) - len(added)
        removed = [e for e in entries.values() if e.seen != stamp] if survivors != len(entries) else []
        return changed, added, removed

    def _apply(
        self,
        snapshot: ClusterSnapshot,
        queues: Mapping[str, QueueInfo],
        changed_rows: list[int],
        pgs: dict[str, PodGroupObj],
        pg_keys: set[str],
        changed: list[tuple[_Pod, PodObj]],
        added: list[tuple[PodObj, int]],
        removed: list[_Pod],
    ) -> None:
        table = self._table
        assert table is not None and self._space is not None
        dirty_jobs: set[str] = set(pg_keys)
        dirty_rows: set[int] = set()
        for row in changed_rows:
            table.replace_node(row, snapshot.nodes[row])
            dirty_rows.add(row)
        self._nodes = snapshot.nodes
        # Which PodGroups have a job: those whose queue exists (all of them are looked at again when
        # the queues change). A PodGroup gaining or losing its job changes its pods' tasks.
        queue_names = frozenset(queues)
        candidates = pgs.keys() if queue_names != self._queue_names else pg_keys
        regroup = {key for key in candidates if (key in self._jobs) != (key in pgs and pgs[key].queue in queues)}
        self._queue_names, self._pgs = queue_names, pgs
        dirty_jobs |= regroup

        rederive: dict[int, _Pod] = {}
        before: dict[int, tuple[int, TaskInfo | None]] = {}  # id(entry) -> its row and task before
        for entry in removed:
            self._relating -= relates(entry.pod)
            if entry.row >= 0:
                dirty_rows.add(entry.row)
            self._forget(entry, dirty_jobs)
            del self._pods[entry.pod.uid]
        for entry, pod in changed:
            self._relating += relates(pod) - relates(entry.pod)
            before[id(entry)] = self._forget(entry, dirty_jobs)
            entry.pod, entry.group = pod, self._group_of(pod)
            rederive[id(entry)] = entry
        for pod, position in added:
            self._relating += relates(pod)
            entry = self._pods[pod.uid] = _Pod(pod, position, self._group_of(pod), seen=self._opens)
            rederive[id(entry)] = entry
        for key in regroup:
            for entry in list(self._groups.get(key, {}).values()):
                if id(entry) not in rederive:
                    before[id(entry)] = self._forget(entry, dirty_jobs)
                    rederive[id(entry)] = entry
        rows = _RowChanges()
        for key in regroup:
            if key in pgs and pgs[key].queue in queues:
                self._jobs[key] = self._new_job(pgs[key])  # members are added below
            else:
                self._jobs.pop(key, None)
        for entry in rederive.values():
            if entry.group:
                self._groups.setdefault(entry.group, {})[entry.pod.uid] = entry
            was_row, was_task = before.get(id(entry), (-1, None))
            self._derive(entry, self._jobs.get(entry.group) if entry.group else None, was_task)
            if entry.task is not None and entry.task.job:
                dirty_jobs.add(entry.task.job)
            if entry.row >= 0:
                self._rows[entry.row][entry.pod.uid] = entry
            rows.settle(entry, was_row, was_task)
        for key in dirty_jobs:
            self._rebuild_job(key, pgs)
        dirty_rows |= rows.rebuild
        self._append(rows, dirty_rows)
        self._rebuild_rows(dirty_rows)
        self.rebuilt = (len(dirty_jobs), len(dirty_rows))
        if self.unreported is not None:
            self.unreported |= dirty_jobs

    def _forget(self, entry: _Pod, dirty_jobs: set[str]) -> tuple[int, TaskInfo | None]:
        """Take a pod out of its group, job (to be rebuilt) and row; the row and task it had, for the
        caller to settle the row."""
        uid = entry.pod.uid
        if entry.group:
            members = self._groups.get(entry.group)
            if members is not None:
                members.pop(uid, None)
                if not members:
                    del self._groups[entry.group]
        if entry.task is not None and entry.task.job:
            dirty_jobs.add(entry.task.job)
        was = entry.row, entry.task
        if entry.row >= 0:
            self._rows[entry.row].pop(uid, None)
        entry.task, entry.row = None, -1
        return was

    def _rebuild_job(self, key: str, pgs: Mapping[str, PodGroupObj]) -> None:
        pg = pgs.get(key)
        if pg is None or key not in self._jobs:
            self._jobs.pop(key, None)
            return
        job = self._jobs[key] = self._new_job(pg)
        members = [e for e in self._groups.get(key, {}).values() if e.task is not None and e.task.job == key]
        for entry in sorted(members, key=lambda e: e.position):
            assert entry.task is not None
            job.add_task(entry.task)

    def _append(self, rows: _RowChanges, dirty_rows: set[int]) -> None:
        """Add the tasks that newly landed on a row to its accounts as they are, where that gives the
        floats a rebuild would: the full build adds a row's tasks in snapshot order (the releasing and
        pipelined ones after the rest), so a row holding neither, whose tasks all come before the new
        ones in the snapshot, ends where a rebuild ends. Any other row is rebuilt. A task swapped on its
        row (same accounting) replaces the old one where it stands."""
        table = self._table
        assert table is not None
        placed: list[tuple[NodeInfo, TaskInfo]] = []
        for row, entries in rows.appended.items():
            if row in dirty_rows:
                continue
            entries.sort(key=lambda e: e.position)
            tail = self._tails[row]
            if (tail is not None and tail.position >= entries[0].position) or _holds_unplain(table, row):
                dirty_rows.add(row)
                continue
            node = table.nodes[row]
            placed.extend((node, e.task) for e in entries if e.task is not None)
            self._tails[row] = entries[-1]
        for row, task in rows.swapped:
            if row not in dirty_rows:
                table.nodes[row].tasks[task.uid] = task
        table.add_tasks(placed)

    def _rebuild_rows(self, rows: set[int]) -> None:
        """Account each row's tasks again from an empty row, in snapshot order (as a full build does)."""
        table = self._table
        if not rows or table is None:
            return
        placed: list[tuple[NodeInfo, TaskInfo]] = []
        for row in sorted(rows):
            table.clear_row(row)
            node = table.nodes[row]
            entries = sorted(self._rows[row].values(), key=lambda e: e.position)
            for entry in entries:
                assert entry.task is not None
                placed.append((node, entry.task))
            self._tails[row] = entries[-1] if entries else None
        table.add_tasks(placed)

    # -- per pod ------------------------------------------------------------------------------------

    def _group_of(self, pod: PodObj) -> str:
        group = pod.group_name
        # One string per PodGroup, not one per pod: each pod's entry keeps it for the state's life.
        return shared(f"{pod.namespace}/{group}") if group and pod.scheduler_name in self._ours else ""

    def _new_job(self, pg: PodGroupObj) -> JobInfo:
        assert self._space is not None
        return build_job(pg, self._space, self._classes)

    def _build_task(self, pod: PodObj, job_uid: str) -> TaskInfo:
        assert self._space is not None
        return build_task(pod, job_uid, self._space, self._classes, self._vectors)

    def _derive(self, entry: _Pod, job: JobInfo | None, previous: TaskInfo | None = None) -> None:
        """The pod's task (kept when the pod and its job are the same; `previous`: the task of the pod's
        last version, which a pod that only moved on derives from) and the row it is accounted on."""
        pod = entry.pod
        if job is None and not (pod.node_name and pod.phase in OCCUPYING_PHASES):
            entry.task, entry.row = None, -1
            return
        job_uid = job.uid if job is not None else ""
        task = entry.task or previous
        if task is not None and task.job != job_uid:
            task = _rejoined(task, pod, job_uid)
        if task is None:
            task = self._build_task(pod, job_uid)
        elif task.pod is not pod:
            task = _moved_on(task, pod) or self._build_task(pod, job_uid)
        entry.task = task
        table = self._table
        assert table is not None
        node = table.by_name.get(task.node_name) if task.node_name else None
        if node is not None and task.status not in _DONE:
            entry.row = node.row
            return
        entry.row = -1
        if job is not None and task.node_name and node is None:
            task.node_name = ""  # its node is gone from the snapshot


def _moved_on(task: TaskInfo, pod: PodObj) -> TaskInfo | None:
    """The task build_task makes of `pod`, from the task of its previous version, when the pod changed
    only where it is and how far it got (bound, started, finished, leaving): what most changes between
    two cycles are (every bind and start in the share), and building a task anew is most of what such a
    change costs an opening. None when anything else changed: then only a build gives the same task."""
    old = task.pod
    if msgspec.structs.replace(old, node_name=pod.node_name, phase=pod.phase, deleting=pod.deleting) != pod:
        return None
    return TaskInfo(
        task.uid, task.name, task.namespace, task.job, task.role, task.resreq, task.best_effort, task.priority,
        task.preemptable, task_status(pod), pod, task.class_key, task.index, pod.node_name, task.preemption_policy,
        None, task.node_class,
    )  # fmt: skip


def _rejoined(task: TaskInfo, pod: PodObj, job_uid: str) -> TaskInfo | None:
    """The task build_task makes of the same `pod` under another job: the task as it is but for its job
    (a task is built from its pod and its job's uid; the priority classes and resource names it also
    reads change only with a full build). A PodGroup created after its pods, deleted, or held out of the
    sessions while settled (the scheduler's share) moves every pod of it so. None when the pod changed."""
    if task.pod is not pod:
        return None
    return TaskInfo(
        task.uid, task.name, task.namespace, job_uid, task.role, task.resreq, task.best_effort, task.priority,
        task.preemptable, task_status(pod), pod, task.class_key, task.index, pod.node_name, task.preemption_policy,
        None, task.node_class,
    )  # fmt: skip


def _positions(pods: Sequence[PodObj], *, by_order: bool) -> Iterable[int]:
    """Each pod's position: its order when the pods are listed by order (the pod's own int object, not
    a copy per entry), else its index."""
    return map(_order_of, pods) if by_order else range(len(pods))


def _names_of(snapshot: ClusterSnapshot) -> Counter[str]:
    """Resource names by how many nodes, pods and PodGroups name them (queues are counted apart)."""
    names: Counter[str] = Counter()
    for node in snapshot.nodes:
        names.update(node.allocatable.keys())
    for pod in snapshot.pods:
        names.update(pod.requests.keys())
    for pg in snapshot.podgroups:
        names.update((pg.min_resources or {}).keys())
    return names


def _space_names(names: Counter[str], snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """The names of resource_space(snapshot) (build.py), from the carried counts and the queues."""
    present = {name for name, count in names.items() if count > 0}
    for queue in snapshot.queues:
        present.update(queue.capability, queue.deserved, queue.guarantee)
    if snapshot.outside is not None:
        present.update(snapshot.outside.names())
    return ResourceSpace.of(present).names


def relates(pod: PodObj) -> bool:
    """Whether where the pod may go, or how nodes score for it, can depend on where other pods are:
    inter-pod affinity or anti-affinity terms, or topology spread constraints. When no pod in the
    cluster relates, the topology plugins have nothing to count (and skip looking at every task)."""
    affinity = pod.affinity
    if affinity is not None and (affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None):
        return True
    return bool(pod.topology_spread)

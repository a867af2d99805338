"""capacity: queues get their `spec.deserved`, bounded by capability, optionally as a tree (Volcano
capacity.go). With `enableHierarchy: true` queues form a tree through `spec.parent` under `root`;
only leaf queues run jobs, and every check also holds for each ancestor (its subtree's usage).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

import numpy as np

from vc_sched_core.framework.interfaces import ALLOWED, Check, ExtensionPoint, PluginArgs, Verdict, Vote
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo
from vc_sched_core.framework.resources import Vector, less_equal
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins.queue_accounts import QueueAccounts, QueueAttr, share
from vc_sched_core.snapshot.cluster import ROOT_QUEUE

NAME: Final = "capacity"
INF = float("inf")


class CapacityPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.hierarchical = bool((args or {}).get("enableHierarchy", False))
        self.ledger: QueueAccounts | None = None
        self.parent: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}

    # -- session wiring ------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        ledger = self._build(ssn)
        P = ExtensionPoint
        ssn.add_fn(P.QUEUE_ORDER, NAME, self.queue_order)
        if self.hierarchical:
            ssn.add_fn(P.VICTIM_QUEUE_ORDER, NAME, self.victim_queue_order)
        ssn.add_fn(P.RECLAIMABLE, NAME, self.reclaimable)
        ssn.add_fn(P.PREEMPTIVE, NAME, self.preemptive)
        ssn.add_fn(P.ALLOCATABLE, NAME, self.allocatable)
        ssn.add_fn(P.JOB_ENQUEUEABLE, NAME, self.job_enqueueable)
        ssn.add_fn(P.JOB_ENQUEUED, NAME, self.job_enqueued)
        ssn.add_event_handler(ledger.placement_handler(queues_of=self._lineage, share_of=self._share))

    def _build(self, ssn: Session) -> QueueAccounts:
        """The queue tree (when hierarchical) and per-queue attributes, parents before children."""
        self.ledger = ledger = QueueAccounts(ssn)
        names = set(ssn.queues) if self.hierarchical else {job.queue for job in ssn.jobs.values()}
        self._build_tree(ssn, names)
        for name in self._top_down(ssn, names):
            self._new_attr(ssn, ssn.queues[name])
        self.ledger.add_jobs(ssn.jobs.values())
        self.ledger.add_outside(ssn.outside_queues)
        for attr in self.ledger.attrs.values():
            attr.share = self._share(attr)
        return ledger

    def on_session_close(self, ssn: Session) -> None:
        self.ledger = None

    def _build_tree(self, ssn: Session, names: set[str]) -> None:
        self.parent, self.children = {}, {}
        if not self.hierarchical:
            return
        for name in names - {ROOT_QUEUE}:
            parent = ssn.queues[name].spec.parent or ROOT_QUEUE
            self.parent[name] = parent if parent in ssn.queues else ROOT_QUEUE
            self.children.setdefault(self.parent[name], []).append(name)

    def _top_down(self, ssn: Session, names: set[str]) -> list[str]:
        ordered, frontier = [], [ROOT_QUEUE] if self.hierarchical else sorted(names)
        while frontier:
            name = frontier.pop(0)
            ordered.append(name)
            frontier.extend(sorted(self.children.get(name, [])))
        return ordered

    def _new_attr(self, ssn: Session, queue: QueueInfo) -> None:
        if self.ledger is None:
            return
        space = ssn.space
        deserved = space.vector(queue.spec.deserved, missing=INF)
        parent = self.parent.get(queue.name)
        if parent is not None and parent in self.ledger.attrs:
            ceiling = self.ledger.attrs[parent].real_capability
        else:
            guarantees = np.sum([space.vector(q.spec.guarantee) for q in ssn.queues.values()], axis=0)
            ceiling = np.clip(ssn.total_resource - guarantees, 0, None) + space.vector(queue.spec.guarantee)
        attr = self.ledger.new_attr(queue, ceiling, deserved)
        attr.real_capability = np.minimum(ceiling, attr.capability)

    # -- usage of a queue and its subtree ------------------------------------------------------------

    def _lineage(self, name: str) -> list[str]:
        chain = [name]
        while chain[-1] in self.parent:
            chain.append(self.parent[chain[-1]])
        return chain

    def _leaves_under(self, name: str) -> list[str]:
        kids = self.children.get(name, [])
        return [name] if not kids else [leaf for kid in kids for leaf in self._leaves_under(kid)]

    def _subtree(self, name: str) -> tuple[Vector, Vector]:
        """(allocated, reserved) summed over the leaf queues under `name`."""
        if self.ledger is None:
            raise RuntimeError("capacity used outside a session")
        attrs = [self.ledger.attrs[leaf] for leaf in self._leaves_under(name) if leaf in self.ledger.attrs]
        zero = self.ledger.space.zeros()
        return sum((a.allocated for a in attrs), zero), sum((a.reserved for a in attrs), zero)

    def _share(self, attr: QueueAttr) -> float:
        if np.all(np.isinf(attr.deserved)):
            return 1.0  # no deserved: ordered after queues that have one
        allocated, _ = self._subtree(attr.name)
        return share(allocated, np.where(np.isinf(attr.deserved), 0.0, attr.deserved))

    # -- extension points ------------------------------------------------------------------------------

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        """Higher spec.priority first, then the lower share; at equal shares a queue with a deserved
        goes before one without (Volcano compareShareWithDeserved), so a best-effort queue, whose share
        is always 1, never overtakes a guaranteed queue that reached its deserved. In a tree a leaf goes
        before an inner queue, and two leaves compare the subtrees they belong to just below their
        nearest common ancestor (siblings compare themselves)."""
        if left.spec.priority != right.spec.priority:
            return -1 if left.spec.priority > right.spec.priority else 1
        lname, rname = left.name, right.name
        if self.hierarchical:
            left_leaf, right_leaf = not self.children.get(lname), not self.children.get(rname)
            if left_leaf != right_leaf:
                return -1 if left_leaf else 1
            if left_leaf:
                lname, rname = self._below_common_ancestor(lname, rname)
        return self._compare_share(lname, rname)

    def _compare_share(self, left: str, right: str) -> int:
        attrs = self.ledger.attrs if self.ledger else {}
        lattr, rattr = attrs.get(left), attrs.get(right)
        lshare = lattr.share if lattr is not None else 1.0
        rshare = rattr.share if rattr is not None else 1.0
        if lshare != rshare:
            return -1 if lshare < rshare else 1
        ldeserved, rdeserved = _has_deserved(lattr), _has_deserved(rattr)
        return 0 if ldeserved == rdeserved else -1 if ldeserved else 1

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        """In a tree, victims go first from the queue sharing the deeper ancestor with the preemptor's."""
        left_level = self._common_level(left.name, preemptor.name)
        right_level = self._common_level(right.name, preemptor.name)
        return 0 if left_level == right_level else -1 if left_level > right_level else 1

    def _ancestors(self, name: str) -> list[str]:
        """The queue's ancestors from root down to its parent."""
        return self._lineage(name)[:0:-1]

    def _common_level(self, left: str, right: str) -> int:
        """Volcano getQueueLevel: the depth of the deepest ancestor both queues share (root is 0)."""
        level = 0
        for depth, (mine, theirs) in enumerate(zip(self._ancestors(left), self._ancestors(right), strict=False)):
            if mine != theirs:
                break
            level = depth
        return level

    def _below_common_ancestor(self, left: str, right: str) -> tuple[str, str]:
        """Each queue's ancestor one level below the deepest one they share, or the queue itself."""
        below = self._common_level(left, right) + 1

        def step(name: str) -> str:
            chain = self._ancestors(name)
            return chain[below] if below < len(chain) else name

        return step(left), step(right)

    def _quota(self, queue: QueueInfo, request: Vector, *, reserved: bool) -> Check:
        """The request fits the real capability of the queue and of every ancestor (subtree usage)."""
        if self.ledger is None or queue.name not in self.ledger.attrs:
            return ALLOWED
        if not queue.is_open:
            return Check(False, f'queue "{queue.name}" is {queue.spec.state}, not Open')
        if self.children.get(queue.name):
            return Check(False, f'queue "{queue.name}" has child queues; only leaf queues run jobs')
        for name in self._lineage(queue.name):
            attr = self.ledger.attrs[name]
            allocated, held = self._subtree(name)
            held = held if reserved else np.zeros_like(held)
            over = (allocated + held + request > attr.real_capability + self.ledger.space.tolerance) & (request > 0)
            if over.any():
                return Check(
                    False,
                    self.ledger.describe(
                        name,
                        over,
                        allocated=allocated,
                        reserved=held if reserved else None,
                        request=request,
                        limit=attr.real_capability,
                        what=self.ledger.limit_names(attr, "capability"),
                    ),
                )
        return ALLOWED

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Check:
        if self.ledger is None:
            return ALLOWED
        return self._quota(queue, task.resreq, reserved=False)

    def job_enqueueable(self, job: JobInfo) -> Verdict:
        queue = self.ledger.attrs[job.queue].queue if self.ledger and job.queue in self.ledger.attrs else None
        if queue is None:
            return Verdict(Vote.ABSTAIN)
        if job.min_resources is None:
            return Verdict(Vote.PERMIT)
        check = self._quota(queue, np.where(job.min_resources_dims, job.min_resources, 0.0), reserved=True)
        return (
            Verdict(Vote.PERMIT)
            if check.ok
            else Verdict(Vote.REJECT, "queue resource quota insufficient: " + check.reason)
        )

    def job_enqueued(self, job: JobInfo) -> None:
        if self.ledger is not None:
            self.ledger.reserve(job)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Within capability, and still under `deserved` on at least one requested resource. A resource
        the queue sets no deserved for counts as deserved 0 (raised to its guarantee), as in Volcano: a
        queue without any deserved never reclaims, whatever its priority."""
        if self.ledger is None or queue.name not in self.ledger.attrs:
            return True
        attr = self.ledger.attrs[queue.name]
        tol = self.ledger.space.tolerance
        asked = task.resreq > 0
        # Only the queue's own real capability counts here, as in Volcano: in a tree its ancestors' (the
        # root's is the whole cluster, full whenever reclaim is needed) would refuse every reclaim.
        if not queue.is_open or ((attr.allocated + task.resreq > attr.real_capability + tol) & asked).any():
            return False
        deserved = np.maximum(np.where(np.isinf(attr.deserved), 0.0, attr.deserved), attr.guarantee)
        future = attr.allocated + task.resreq
        return bool(((future <= deserved + tol) & asked).any())

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Volcano's capacity reclaimable, on the resources that matter to each pair: a reclaimee that
        asks for none of what the reclaimer asks for is skipped; its queue must stay at or above its
        guarantee without it; and it goes if its queue has no deserved on any resource it uses (an
        immediate victim) or is above deserved on one of them. Each victim lowers its queue's
        allocation for the next one."""
        if self.ledger is None:
            return []
        tol = self.ledger.space.tolerance
        allocations: dict[str, Vector] = {}
        victims = []
        wanted = reclaimer.resreq > tol
        for task in reclaimees:
            attr = self.ledger.attrs.get(self.ledger.jobs[task.job].queue)
            if attr is None:
                continue
            used = task.resreq > tol
            if not (used & wanted).any():
                continue
            allocated = allocations.setdefault(attr.name, attr.allocated.copy())
            if not less_equal(attr.guarantee, allocated - task.resreq, tol):
                continue
            relevant = used & np.isfinite(attr.deserved) & (attr.deserved > 0)
            if relevant.any() and not ((allocated > attr.deserved + tol) & relevant).any():
                continue
            allocated -= task.resreq
            victims.append(task)
        return victims


def _has_deserved(attr: QueueAttr | None) -> bool:
    """Whether the queue sets a deserved on some resource (absent ones are held as inf)."""
    return attr is not None and bool((np.isfinite(attr.deserved) & (attr.deserved > 0)).any())

"""proportion: queues share the cluster by weight (Volcano proportion.go).

Each queue with jobs gets a `deserved` amount by water-filling over weights, capped by its real
capability and its request and floored at its guarantee. Queues under their share go first; a queue
may allocate within its deserved share and never beyond its capability counting reservations.
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
from vc_sched_core.plugins.shares import ShareOf

NAME: Final = "proportion"
MAX_ROUNDS: Final = 1000


def water_fill(total: Vector, attrs: Sequence[QueueAttr], tol: Vector) -> None:
    """Volcano's deserved loop: hand out what remains by weight until every queue is met."""
    remaining = total.copy()
    met: set[str] = set()
    for _ in range(MAX_ROUNDS):
        unmet = [a for a in attrs if a.name not in met]
        weights = sum(a.queue.weight for a in unmet)
        if weights == 0:
            break
        increased, decreased = np.zeros_like(total), np.zeros_like(total)
        for attr in unmet:
            old = attr.deserved.copy()
            attr.deserved = attr.deserved + remaining * attr.queue.weight / weights
            attr.deserved = np.minimum(np.minimum(attr.deserved, attr.real_capability), attr.request)
            attr.deserved = np.maximum(attr.deserved, attr.guarantee)
            if less_equal(attr.request, attr.deserved, tol) or np.allclose(attr.deserved, old, rtol=0, atol=1e-9):
                met.add(attr.name)
            diff = attr.deserved - old
            increased += np.clip(diff, 0, None)
            decreased += np.clip(-diff, 0, None)
        previous = remaining
        remaining = np.clip(remaining + decreased - increased, 0, None)
        if np.all(remaining <= tol) or np.allclose(remaining, previous, rtol=0, atol=1e-9):
            break


class ProportionPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.ledger: QueueAccounts | None = None
        # Per queue, fixed once the deserved shares are filled: the share function and the limits an
        # allocation is checked against, tolerance included (the hot path compares, nothing more).
        self._share_of: dict[str, ShareOf] = {}
        self._limits: dict[str, tuple[Vector, Vector]] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.ledger = self.build_ledger(ssn)
        tol = ssn.space.tolerance
        for name, attr in self.ledger.attrs.items():
            self._share_of[name] = ShareOf(attr.deserved)
            self._limits[name] = (attr.real_capability + tol, attr.deserved + tol)
        self._register(ssn, self.ledger)

    @staticmethod
    def build_ledger(ssn: Session) -> QueueAccounts:
        """Queue attributes for queues with jobs, and their deserved shares by water-filling."""
        ledger = QueueAccounts(ssn)
        total = ssn.total_resource
        guarantees = [ssn.space.vector(q.spec.guarantee) for q in ssn.queues.values()]
        total_guarantee = np.sum(guarantees, axis=0) if guarantees else ssn.space.zeros()
        for name in sorted({job.queue for job in ssn.jobs.values()}):
            queue = ssn.queues[name]
            attr = ledger.new_attr(queue, ssn.space.zeros())
            attr.real_capability = np.minimum(
                np.clip(total - total_guarantee, 0, None) + attr.guarantee, attr.capability
            )
        ledger.add_jobs(ssn.jobs.values())
        ledger.add_outside(ssn.outside_queues)
        water_fill(total, list(ledger.attrs.values()), ssn.space.tolerance)
        for attr in ledger.attrs.values():
            attr.share = share(attr.allocated, attr.deserved)
        return ledger

    def _register(self, ssn: Session, ledger: QueueAccounts) -> None:
        P = ExtensionPoint
        ssn.add_fn(P.QUEUE_ORDER, NAME, self.queue_order)
        ssn.add_fn(P.RECLAIMABLE, NAME, self.reclaimable)
        ssn.add_fn(P.OVERUSED, NAME, self.overused)
        ssn.add_fn(P.ALLOCATABLE, NAME, self.allocatable)
        ssn.add_fn(P.PREEMPTIVE, NAME, self.preemptive)
        ssn.add_fn(P.JOB_ENQUEUEABLE, NAME, self.job_enqueueable)
        ssn.add_fn(P.JOB_ENQUEUED, NAME, self.job_enqueued)
        ssn.add_event_handler(
            ledger.placement_handler(
                queues_of=lambda queue: (queue,), share_of=lambda a: self._share_of[a.name](a.allocated)
            )
        )

    def on_session_close(self, ssn: Session) -> None:
        self.ledger = None
        self._share_of, self._limits = {}, {}

    def _attr(self, name: str) -> QueueAttr | None:
        return self.ledger.attrs.get(name) if self.ledger else None

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.spec.priority != right.spec.priority:
            return -1 if left.spec.priority > right.spec.priority else 1
        lattr, rattr = self._attr(left.name), self._attr(right.name)
        lshare = lattr.share if lattr else 0.0
        rshare = rattr.share if rattr else 0.0
        return 0 if lshare == rshare else -1 if lshare < rshare else 1

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Victims only from queues above their deserved share, until they are back at it. A queue
        holding less than the reclaimer asks is no exception: the node's idle resources may make up
        the rest (Volcano dropped that check), and reclaim evicts only until the task fits."""
        if self.ledger is None:
            return []
        tol = self.ledger.space.tolerance
        allocations: dict[str, Vector] = {}
        victims = []
        for task in reclaimees:
            attr = self._attr(self.ledger.jobs[task.job].queue)
            if attr is None:
                continue
            allocated = allocations.setdefault(attr.name, attr.allocated.copy())
            if not less_equal(allocated, attr.deserved, tol):
                allocated -= task.resreq
                victims.append(task)
        return victims

    def overused(self, queue: QueueInfo) -> bool:
        attr = self._attr(queue.name)
        return attr is not None and less_equal(attr.deserved, attr.allocated, self.ledger.space.tolerance)  # type: ignore[union-attr]

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> Check:
        """Open, within real capability, and within the deserved share on the requested resources."""
        attr = self._attr(queue.name)
        if attr is None or self.ledger is None:
            return ALLOWED
        if not queue.is_open:
            return Check(False, f'queue "{queue.name}" is {queue.spec.state}, not Open')
        capability, deserved = self._limits[queue.name]
        future, asked = attr.allocated + task.resreq, task.resreq > 0
        if not ((future > capability) & asked).any() and not ((future > deserved) & asked).any():
            return ALLOWED  # what quota_check below decides, without building its message
        capped = self.ledger.quota_check(attr, task.resreq, attr.real_capability, "capability", reserved=False)
        if not capped.ok:
            return capped
        return self.ledger.quota_check(attr, task.resreq, attr.deserved, "deserved share", reserved=False)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return self.allocatable(queue, task).ok

    def job_enqueueable(self, job: JobInfo) -> Verdict:
        """allocated + reservations of admitted jobs + minResources <= real capability, per resource.

        Volcano also subtracts the queue's elastic resources here; that lets admitted minimums add
        up beyond the capability (Volcano issues 921, 1860), so Tephra does not.
        """
        attr = self._attr(job.queue)
        if attr is None or self.ledger is None:
            return Verdict(Vote.ABSTAIN)
        if not attr.queue.is_open:
            return Verdict(Vote.REJECT, f'queue "{attr.name}" is {attr.queue.spec.state}, not Open')
        if job.min_resources is None:
            return Verdict(Vote.PERMIT)
        request = np.where(job.min_resources_dims, job.min_resources, 0.0)
        check = self.ledger.quota_check(attr, request, attr.real_capability, "capability", reserved=True)
        if check.ok:
            return Verdict(Vote.PERMIT)
        return Verdict(Vote.REJECT, "queue resource quota insufficient: " + check.reason)

    def job_enqueued(self, job: JobInfo) -> None:
        if self.ledger is not None:
            self.ledger.reserve(job)

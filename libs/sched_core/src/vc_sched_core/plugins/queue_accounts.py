"""Per-queue resource bookkeeping shared by proportion and capacity.

Besides Volcano's allocated/request/inqueue sums, the accounts keep each admitted job's *reservation*
(its minResources not yet placed), so a quota check can count allocated + reserved + the new request
exactly, per resource, and a job's own reservation shrinks as its tasks are placed (Volcano issues 921, 1860).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from vc_sched_core.framework.interfaces import ALLOWED, Check, EventHandler
from vc_sched_core.framework.model import ALLOCATED_STATUSES, JobInfo, PodGroupPhase, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.resources import ResourceSpace, Vector, exceeding, format_amount
from vc_sched_core.framework.session import OutsideQueue, Session

INF = float("inf")


@dataclass(slots=True, eq=False)
class QueueAttr:
    queue: QueueInfo
    allocated: Vector
    request: Vector
    reserved: Vector  # Volcano's `inqueue`: Σ unplaced minResources of admitted jobs
    capability: Vector  # inf where the queue sets no limit
    guarantee: Vector
    deserved: Vector
    real_capability: Vector
    share: float = 0.0

    @property
    def name(self) -> str:
        return self.queue.name


def capability_vector(space: ResourceSpace, queue: QueueInfo) -> Vector:
    """spec.capability with absent names unlimited; cpu/memory <= 0 also mean unlimited (Volcano)."""
    cap = space.vector(queue.spec.capability, missing=INF)
    cap[:2] = np.where(cap[:2] <= 0, INF, cap[:2])
    return cap


class QueueAccounts:
    """A session's per-queue sums (QueueAttr) and admitted jobs' reservations. (Not the scheduler's
    placement ledger, which reserves nodes and queues between scheduler instances.)"""

    def __init__(self, ssn: Session) -> None:
        self.space = ssn.space
        self.jobs = ssn.jobs
        self.attrs: dict[str, QueueAttr] = {}
        self.placed: dict[str, Vector] = {}
        self.reservations: dict[str, Vector] = {}

    def new_attr(self, queue: QueueInfo, real_capability: Vector, deserved: Vector | None = None) -> QueueAttr:
        space = self.space
        attr = QueueAttr(
            queue=queue,
            allocated=space.zeros(),
            request=space.zeros(),
            reserved=space.zeros(),
            capability=capability_vector(space, queue),
            guarantee=space.vector(queue.spec.guarantee),
            deserved=space.zeros() if deserved is None else deserved,
            real_capability=real_capability,
        )
        self.attrs[queue.name] = attr
        return attr

    def add_jobs(self, jobs: Iterable[JobInfo]) -> None:
        """Each job's placed and pending requests, and the reservation of an admitted job, into its
        queue's sums (in job order; the per-job sums are the job's own, see _opening_sums)."""
        queues: list[str] = []
        allocated: list[Vector] = []
        requested: list[Vector] = []
        reserving: list[tuple[str, Vector]] = []
        for job in jobs:
            if job.queue not in self.attrs:
                continue
            request, placed, reservation = _opening_sums(job, self.space)
            self.placed[job.uid] = placed
            queues.append(job.queue)
            allocated.append(job.allocated)
            requested.append(request)
            if reservation is not None and job.uid not in self.reservations:
                self.reservations[job.uid] = reservation
                reserving.append((job.queue, reservation))
        self._add_rows("allocated", queues, allocated)
        self._add_rows("request", queues, requested)
        self._add_rows("reserved", [q for q, _ in reserving], [r for _, r in reserving])

    def add_outside(self, outside: Mapping[str, OutsideQueue]) -> None:
        """The sums of the PodGroups outside a partial snapshot (another scheduler instance's share), so
        each queue's figures are the whole cluster's."""
        for name, sums in outside.items():
            attr = self.attrs.get(name)
            if attr is not None:
                attr.allocated = attr.allocated + sums.allocated
                attr.request = attr.request + sums.request
                attr.reserved = attr.reserved + sums.reserved

    def _add_rows(self, field: str, queues: list[str], rows: list[Vector]) -> None:
        """attr.<field> += row for each (queue, row) in order: one np.add.at (adds in index order, the
        same floats as the loop) instead of one operation per job."""
        if not rows:
            return
        index = {name: i for i, name in enumerate(self.attrs)}
        totals = np.array([getattr(attr, field) for attr in self.attrs.values()], dtype=np.float64)
        np.add.at(totals, np.fromiter((index[q] for q in queues), dtype=np.intp, count=len(queues)), np.array(rows))
        for attr, total in zip(self.attrs.values(), totals, strict=True):
            setattr(attr, field, total)

    def reservation_of(self, job: JobInfo, extra: Vector | None = None) -> Vector:
        if job.min_resources is None:
            return self.space.zeros()
        placed = self.placed.get(job.uid)
        if placed is None:
            placed = self.space.zeros()
        if extra is not None:
            placed = placed + extra
        # maximum(x, 0) is clip(x, 0, None) (the same floats, -0.0 included) without clip's wrapper.
        return np.where(job.min_resources_dims, np.maximum(job.min_resources - placed, 0.0), 0.0)

    def reserve(self, job: JobInfo) -> None:
        """JobEnqueued: the queue now holds the job's unplaced minResources."""
        attr = self.attrs.get(job.queue)
        if attr is None or job.uid in self.reservations:
            return
        self.reservations[job.uid] = self.reservation_of(job)
        attr.reserved += self.reservations[job.uid]

    def on_placed(self, task: TaskInfo, sign: float) -> None:
        job = self.jobs.get(task.job)
        attr = self.attrs.get(job.queue) if job else None
        if job is None or attr is None:
            return
        placed = self.placed.get(job.uid)
        if placed is None:
            placed = self.space.zeros()
        # x + r and x - r: the same floats as x + r * sign, one operation fewer (a placement's hot path).
        if sign > 0:
            attr.allocated += task.resreq
            self.placed[job.uid] = placed + task.resreq
        else:
            attr.allocated -= task.resreq
            self.placed[job.uid] = placed - task.resreq
        held = self.reservations.get(job.uid)
        if held is not None:
            attr.reserved -= held
            self.reservations[job.uid] = self.reservation_of(job)
            attr.reserved += self.reservations[job.uid]

    def placement_handler(
        self, *, queues_of: Callable[[str], Iterable[str]], share_of: Callable[[QueueAttr], float]
    ) -> EventHandler:
        """What proportion and capacity both register: book each (de)allocation against the job's queue,
        then recompute the shares of the queues it counts towards (`queues_of`: the queue itself, or with
        a hierarchy the queue and its ancestors)."""

        def placed(task: TaskInfo, sign: float) -> None:
            self.on_placed(task, sign)
            job = self.jobs.get(task.job)
            for name in queues_of(job.queue) if job is not None else ():
                attr = self.attrs.get(name)
                if attr is not None:
                    attr.share = share_of(attr)

        return EventHandler(allocate=lambda task: placed(task, 1.0), deallocate=lambda task: placed(task, -1.0))

    def quota_check(self, attr: QueueAttr, request: Vector, limit: Vector, what: str, *, reserved: bool) -> Check:
        """allocated (+ reservations of admitted jobs when `reserved`) + request <= limit, per resource.

        Enqueue counts reservations, so admitted minResources never add up beyond the limit;
        allocate counts only what is placed, since every allocating job is itself admitted.
        """
        held = attr.reserved if reserved else np.zeros_like(attr.reserved)
        future = attr.allocated + held + request
        over = exceeding(future, limit, self.space.tolerance, request > 0)
        if not over.any():
            return ALLOWED
        limit_name = self.limit_names(attr, what)
        return Check(
            False,
            self.describe(
                attr.name,
                over,
                allocated=attr.allocated,
                reserved=held if reserved else None,
                request=request,
                limit=limit,
                what=limit_name,
            ),
        )

    def limit_names(self, attr: QueueAttr, what: str) -> list[str]:
        """Per resource, what the limit is: the queue's own capability, or (when the queue sets none)
        the cluster's total less other queues' guarantees."""
        if what != "capability":
            return [what] * self.space.size
        return ["capability" if np.isfinite(c) else "the cluster total" for c in attr.capability]

    def describe(
        self,
        queue: str,
        over: np.ndarray,
        *,
        allocated: Vector,
        reserved: Vector | None,
        request: Vector,
        limit: Vector,
        what: str | list[str],
    ) -> str:
        names = [what] * self.space.size if isinstance(what, str) else what
        parts = [
            self._describe_dim(int(dim), allocated, reserved, request, limit, names[dim])
            for dim in np.flatnonzero(over)
        ]
        label = "capability" if isinstance(what, list) else what
        return f'queue "{queue}" {label} would be exceeded ({"; ".join(parts)})'

    def _describe_dim(
        self, dim: int, allocated: Vector, reserved: Vector | None, request: Vector, limit: Vector, limit_name: str
    ) -> str:
        name = self.space.names[dim]
        used, asked, cap = (format_amount(name, float(vec[dim])) for vec in (allocated, request, limit))
        held = "" if reserved is None else f" + reserved by admitted jobs {format_amount(name, float(reserved[dim]))}"
        return f"{name}: allocated {used}{held} + request {asked} > {limit_name} {cap}"


def _opening_sums(job: JobInfo, space: ResourceSpace) -> tuple[Vector, Vector, Vector | None]:
    """As the job opens: Σ requests of its placed and pending tasks, Σ of its placed and pipelined ones,
    and, when it holds a reservation, its unplaced minResources. Memoised on the job (read-only
    arrays): it opens the same every cycle while carried unchanged."""
    memo = job.opening_memo.get("queue_accounts.sums")
    if memo is None:
        request, placed = space.zeros(), space.zeros()
        for task in job.tasks.values():
            status = task.status
            if status in ALLOCATED_STATUSES:
                request += task.resreq
                placed += task.resreq
            elif status == TaskStatus.PENDING:
                request += task.resreq
            elif status == TaskStatus.PIPELINED:
                placed += task.resreq
        reservation = None
        if job.min_resources is not None and _holds_reservation(job):
            reservation = np.where(job.min_resources_dims, np.maximum(job.min_resources - placed, 0.0), 0.0)
            reservation.flags.writeable = False
        request.flags.writeable = placed.flags.writeable = False
        memo = job.opening_memo["queue_accounts.sums"] = (request, placed, reservation)
    return memo


def _holds_reservation(job: JobInfo) -> bool:
    """Inqueue PodGroups, and Running ones already at minMember, reserve their unplaced minResources."""
    if job.phase == PodGroupPhase.INQUEUE:
        return True
    placed = job.count(*ALLOCATED_STATUSES)
    return job.phase == PodGroupPhase.RUNNING and placed >= job.min_available


def share(allocated: Vector, deserved: Vector) -> float:
    """max_r allocated/deserved; Volcano's Share: 0/0 = 0, x/0 = 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(
            deserved > 0, allocated / np.where(deserved > 0, deserved, 1), np.where(allocated > 0, 1.0, 0.0)
        )
    return float(ratios.max()) if ratios.size else 0.0

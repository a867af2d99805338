"""A queue's quota bars: per resource, what is allocated against what it deserves and its capability.

From the Queue alone: `status.allocated` (written by the scheduler), `status.inqueueResources`
(admitted, not placed yet; written by the queue-controller), `spec.deserved` and `spec.capability`.
A bar's full width is the largest of them, so every mark fits; an absent capability is unlimited,
and then the cluster's allocatable (when known) sets the width, so a queue without limits is not drawn
full just because it is the only mark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from vc_core.resources import schedulable_resources
from vc_dashboard.logic.amounts import human, ordered, parse_amounts, percent
from vc_dashboard.logic.hierarchy import GroupCounts, own_counts
from vc_proto.scheduling import Queue


@dataclass(frozen=True, slots=True)
class QuotaBar:
    resource: str
    allocated: Fraction
    inqueue: Fraction
    deserved: Fraction | None
    capability: Fraction | None
    cluster: Fraction | None = None  # the nodes' allocatable: the width when capability is unlimited

    @property
    def scale(self) -> Fraction:
        limit = self.capability if self.capability is not None else self.cluster
        marks = [self.allocated + self.inqueue, self.deserved or 0, limit or 0]
        return max(Fraction(m) for m in marks)

    @property
    def allocated_pct(self) -> float:
        return percent(self.allocated, self.scale)

    @property
    def inqueue_pct(self) -> float:
        """The admitted-not-placed part, drawn after the allocated part."""
        return percent(self.allocated + self.inqueue, self.scale) - self.allocated_pct

    @property
    def deserved_pct(self) -> float | None:
        return None if self.deserved is None else percent(self.deserved, self.scale)

    @property
    def capability_pct(self) -> float | None:
        return None if self.capability is None else percent(self.capability, self.scale)

    @property
    def over_deserved(self) -> bool:
        return self.deserved is not None and self.allocated > self.deserved

    @property
    def label(self) -> str:
        parts = [f"{human(self.resource, self.allocated)} allocated"]
        if self.inqueue:
            parts.append(f"{human(self.resource, self.inqueue)} admitted")
        if self.deserved is not None:
            parts.append(f"{human(self.resource, self.deserved)} deserved")
        if self.capability is not None:
            parts.append(f"{human(self.resource, self.capability)} capability")
        elif self.cluster:
            parts.append(f"no capability (cluster {human(self.resource, self.cluster)})")
        else:
            parts.append("no capability")
        return " / ".join(parts)


@dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    state: str
    weight: int
    parent: str
    reclaimable: bool
    pending: int
    inqueue: int
    running: int
    completed: int
    bars: list[QuotaBar]


def quota_bars(queue: Queue, cluster: Mapping[str, Fraction] | None = None) -> list[QuotaBar]:
    spec, status = queue.spec, queue.status
    # Only what nodes offer: a job's minResources carries quota keys too (requests.memory stands for
    # memory; limits.*, count/pods and pods limit nothing here), which were each drawn as a bar.
    allocated = schedulable_resources(parse_amounts(status.allocated if status else None))
    inqueue = schedulable_resources(parse_amounts(status.inqueue_resources if status else None))
    deserved = schedulable_resources(parse_amounts(spec.deserved if spec else None))
    capability = schedulable_resources(parse_amounts(spec.capability if spec else None))
    names = ordered([*allocated, *inqueue, *deserved, *capability])
    return [
        QuotaBar(
            resource=name,
            allocated=allocated.get(name, Fraction(0)),
            inqueue=inqueue.get(name, Fraction(0)),
            deserved=deserved.get(name),
            capability=capability.get(name),
            cluster=(cluster or {}).get(name),
        )
        for name in names
    ]


def queue_row(
    queue: Queue, cluster: Mapping[str, Fraction] | None = None, counts: GroupCounts | None = None
) -> QueueRow:
    """`counts`: the PodGroups the row reports (hierarchy.subtree_counts); the queue's own by default."""
    spec = queue.spec
    shown = counts if counts is not None else own_counts(queue)
    return QueueRow(
        name=queue.metadata.name or "",
        state=(queue.status.state if queue.status else None) or "Open",
        weight=(spec.weight if spec else None) or 1,
        parent=(spec.parent if spec else None) or "",
        reclaimable=bool(spec.reclaimable) if spec and spec.reclaimable is not None else True,
        pending=shown.pending,
        inqueue=shown.inqueue,
        running=shown.running,
        completed=shown.completed,
        bars=quota_bars(queue, cluster),
    )


def queue_order(queue: Queue) -> tuple[int, str]:
    """`root` first (the hierarchy's top), then by name."""
    name = queue.metadata.name or ""
    return (0 if name == "root" else 1, name)

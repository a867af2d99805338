"""The queue hierarchy as the scheduler sees it, and a queue's PodGroup counts summed over its subtree.

A queue's `status.pending/inqueue/running/completed` count the PodGroups submitted to that queue itself
(Volcano's queue controller), so `root`, which no job is submitted to, says `0 pending · 0 running`
while its `status.allocated` holds everything its children run. A row that shows a queue's load sums
the counts of the queue and every queue below it, as its allocation does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from vc_proto.scheduling import Queue

ROOT: Final = "root"


@dataclass(frozen=True, slots=True)
class GroupCounts:
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    completed: int = 0

    def __add__(self, other: GroupCounts) -> GroupCounts:
        return GroupCounts(
            self.pending + other.pending,
            self.inqueue + other.inqueue,
            self.running + other.running,
            self.completed + other.completed,
        )


def name_of(queue: Queue) -> str:
    return queue.metadata.name or ""


def parent_of(queue: Queue) -> str | None:
    """The queue's parent: `root` for a queue that names none (Volcano's hierarchy); None for `root`."""
    if name_of(queue) == ROOT:
        return None
    return (queue.spec.parent if queue.spec else None) or ROOT


def own_counts(queue: Queue) -> GroupCounts:
    status = queue.status
    if status is None:
        return GroupCounts()
    return GroupCounts(status.pending or 0, status.inqueue or 0, status.running or 0, status.completed or 0)


def children_by_parent(queues: Iterable[Queue]) -> dict[str, list[str]]:
    """Each parent's children, sorted by name."""
    children: dict[str, list[str]] = {}
    for queue in queues:
        parent = parent_of(queue)
        if parent is not None:
            children.setdefault(parent, []).append(name_of(queue))
    return {parent: sorted(names) for parent, names in children.items()}


def subtree_counts(queues: Iterable[Queue]) -> dict[str, GroupCounts]:
    """Per queue: its own counts plus those of every queue below it (a cycle is counted once)."""
    by_name: Mapping[str, Queue] = {name_of(q): q for q in queues}
    children = children_by_parent(by_name.values())
    totals: dict[str, GroupCounts] = {}

    def total(name: str, seen: frozenset[str]) -> GroupCounts:
        if name in totals:
            return totals[name]
        summed = own_counts(by_name[name])
        for child in children.get(name, ()):
            if child not in seen and child in by_name:
                summed += total(child, seen | {child})
        totals[name] = summed
        return summed

    for name in by_name:
        total(name, frozenset({name}))
    return totals

"""One queue's page: where it sits in the hierarchy, its limits per resource (deserved, guaranteed,
capability) beside what it holds (allocated, admitted but not placed), and its jobs.

Only the resources a node offers are listed: a job's minResources carries Kubernetes quota keys
(`requests.memory`, `limits.cpu`, `count/pods`) that limit nothing here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from vc_core.resources import schedulable_resources
from vc_dashboard.logic.amounts import human, ordered, parse_amounts
from vc_dashboard.logic.hierarchy import children_by_parent, parent_of
from vc_proto.scheduling import Queue


@dataclass(frozen=True, slots=True)
class LimitRow:
    resource: str
    allocated: str
    inqueue: str
    deserved: str
    guarantee: str
    capability: str


@dataclass(frozen=True, slots=True)
class QueueDetail:
    name: str
    state: str
    weight: int
    reclaimable: bool
    lineage: list[str]  # root first, the queue last
    children: list[str]
    limits: list[LimitRow]


def _name(queue: Queue) -> str:
    return queue.metadata.name or ""


def lineage(queue: Queue, by_name: Mapping[str, Queue]) -> list[str]:
    """The queue's ancestors, root first, then the queue (a cycle or a missing parent ends the walk); a
    queue that names no parent is under `root`."""
    chain = [_name(queue)]
    parent = parent_of(queue)
    while parent and parent not in chain:
        chain.append(parent)
        above = by_name.get(parent)
        parent = parent_of(above) if above is not None else None
    return list(reversed(chain))


def _cell(amounts: Mapping[str, Fraction], name: str, absent: str) -> str:
    return human(name, amounts[name]) if name in amounts else absent


def queue_detail(queue: Queue, queues: Iterable[Queue]) -> QueueDetail:
    by_name = {_name(q): q for q in queues}
    spec, status = queue.spec, queue.status
    columns = {
        "allocated": parse_amounts(status.allocated if status else None),
        "inqueue": parse_amounts(status.inqueue_resources if status else None),
        "deserved": parse_amounts(spec.deserved if spec else None),
        "guarantee": parse_amounts(spec.guarantee.resource if spec and spec.guarantee else None),
        "capability": parse_amounts(spec.capability if spec else None),
    }
    columns = {column: schedulable_resources(amounts) for column, amounts in columns.items()}
    names = ordered({n for amounts in columns.values() for n in amounts})
    rows = [
        LimitRow(
            resource=name,
            allocated=_cell(columns["allocated"], name, "0"),
            inqueue=_cell(columns["inqueue"], name, "0"),
            deserved=_cell(columns["deserved"], name, "-"),
            guarantee=_cell(columns["guarantee"], name, "-"),
            capability=_cell(columns["capability"], name, "unlimited"),
        )
        for name in names
    ]
    children = children_by_parent(by_name.values()).get(_name(queue), [])
    return QueueDetail(
        name=_name(queue),
        state=(status.state if status else None) or "Open",
        weight=(spec.weight if spec else None) or 1,
        reclaimable=(spec.reclaimable if spec else None) is not False,
        lineage=lineage(queue, by_name),
        children=children,
        limits=rows,
    )

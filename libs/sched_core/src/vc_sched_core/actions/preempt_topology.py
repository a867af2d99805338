"""preempt's topology-aware mode (Volcano `enableTopologyAwarePreemption`, kube-scheduler's preemption).

Instead of evicting victims on the best-scored node until the preemptor fits, every candidate node is
dry-run: the victims are taken off lowest priority first until the preemptor fits there, then each is
put back, highest priority first, if the preemptor still fits without evicting it (its "reprieve"). So
a victim whose removal resolves nothing (a pod the preemptor's anti-affinity does not select, once the
one it selects is gone) is spared. Among the nodes that can host the preemptor, the one whose victims
matter least is chosen: the lowest highest victim priority, then the lowest sum of priorities, then
the fewest victims, then the first node (kube-scheduler would then prefer the latest-started victims,
which a snapshot does not carry, and tries the nodes from a random offset: here they go in node order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from vc_sched_core.actions.victims import preemptor_fits_on_node, victims_can_make_room, victims_queue
from vc_sched_core.framework.model import QueueInfo, TaskInfo
from vc_sched_core.framework.nodes import NodeInfo
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.statement import Statement

ENABLE_KEY = "enableTopologyAwarePreemption"
_PRIORITY_SHIFT = 2**31
Filter = Callable[[TaskInfo], bool]


@dataclass(frozen=True, slots=True)
class CandidateLimits:
    """How many nodes that can host the preemptor are dry-run before choosing (Volcano's defaults)."""

    min_percentage: int = 10
    min_absolute: int = 1
    max_absolute: int = 100

    @classmethod
    def from_args(cls, args: Mapping[str, object]) -> CandidateLimits:
        def read(key: str, default: int) -> int:
            value = args.get(key, default)
            return value if isinstance(value, int) and not isinstance(value, bool) else default

        default = cls()
        return cls(
            read("minCandidateNodesPercentage", default.min_percentage),
            read("minCandidateNodesAbsolute", default.min_absolute),
            read("maxCandidateNodesAbsolute", default.max_absolute),
        )

    def count(self, nodes: int) -> int:
        wanted = max(nodes * self.min_percentage // 100, self.min_absolute)
        return min(wanted, self.max_absolute, nodes)


@dataclass(frozen=True, slots=True)
class Candidate:
    node: NodeInfo
    victims: tuple[TaskInfo, ...]  # highest priority first


def topology_aware_preempt(
    ssn: Session,
    stmt: Statement,
    preemptor: TaskInfo,
    candidate: Filter,
    nodes: Sequence[NodeInfo],
    limits: CandidateLimits,
) -> bool:
    """Evict the chosen candidate's victims and pipeline the preemptor there; False when no node can
    host it whatever is evicted."""
    queue = ssn.queues[ssn.jobs[preemptor.job].queue]
    wanted = limits.count(len(nodes)) if nodes else 0
    found: list[Candidate] = []
    for node in nodes:
        victims = _victims_on_node(ssn, preemptor, queue, node, candidate)
        if victims:
            found.append(Candidate(node, victims))
            if len(found) >= wanted:
                break
    if not found:
        return False
    best = _pick(found)
    node_stmt = Statement(ssn)
    for victim in best.victims:
        node_stmt.evict(victim, "preempt")
    node_stmt.pipeline(preemptor, best.node)
    stmt.merge(node_stmt)
    return True


def _victims_on_node(
    ssn: Session, preemptor: TaskInfo, queue: QueueInfo, node: NodeInfo, candidate: Filter
) -> tuple[TaskInfo, ...]:
    """Volcano SelectVictimsOnNode: the fewest victims, by priority, that let the preemptor fit."""
    preemptees = sorted((t for t in node.tasks.values() if candidate(t)), key=lambda t: t.uid)
    allowed = ssn.preemptable(preemptor, preemptees)
    if not victims_can_make_room(ssn, preemptor, node, allowed):
        return ()
    order = victims_queue(ssn, allowed, preemptor)
    potential: list[TaskInfo] = []
    while not order.empty():
        potential.append(order.pop())
        if _fits_without(ssn, preemptor, queue, node, potential):
            break
    # Volcano asks only the predicates here; the resources and the queue are asked again in each
    # reprieve, and a node where even all of them gone does not do is left rather than evicted in vain.
    if not potential or not _fits_without(ssn, preemptor, queue, node, potential):
        return ()
    victims: list[TaskInfo] = []
    for index in range(len(potential) - 1, -1, -1):  # reprieve the highest priority first
        still_off = potential[:index]
        if not _fits_without(ssn, preemptor, queue, node, [*still_off, *victims]):
            victims.append(potential[index])
    return tuple(victims)


def _fits_without(
    ssn: Session, preemptor: TaskInfo, queue: QueueInfo, node: NodeInfo, gone: Iterable[TaskInfo]
) -> bool:
    """Whether the preemptor fits the node with `gone` evicted: a dry run undone at once."""
    trial = Statement(ssn)
    for task in gone:
        trial.evict(task, "preempt")
    fits = preemptor_fits_on_node(ssn, queue, preemptor, node)
    trial.discard()
    return fits


def _pick(candidates: list[Candidate]) -> Candidate:
    """kube-scheduler's pickOneNodeForPreemption without PDBs or start times: the lowest highest
    victim priority, then the lowest sum of priorities, then the fewest victims, then the first."""

    def priority(task: TaskInfo) -> int:
        return task.pod.priority or 0  # Volcano PodPriority: the pod's spec.priority, else 0

    def key(c: Candidate) -> tuple[int, int, int]:
        # Each priority is shifted to be >= 0 (by 2^31, as kube-scheduler does) before summing.
        shifted = sum(priority(v) + _PRIORITY_SHIFT for v in c.victims)
        return (max(priority(v) for v in c.victims), shifted, len(c.victims))

    return min(candidates, key=key)

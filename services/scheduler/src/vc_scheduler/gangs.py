"""PURE: a cycle's binds grouped into gangs (one PodGroup's binds of one cycle), each with what its
ledger reservations need: the pods' requests, the nodes' capacities, and the capped queues above it.
The binder (binder.py) commits each gang all or nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from vc_core.resources import PODS, Resources
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.framework.decisions import Bind, Evict
from vc_sched_core.snapshot.cluster import ROOT_QUEUE, ClusterSnapshot, NodeObj, PodGroupObj, PodObj, QueueObj
from vc_scheduler.cluster_index import podgroup_key
from vc_scheduler.ledger import View, queue_chain

UNLIMITED_PODS = Fraction(10**9)


@dataclass(frozen=True, slots=True)
class Gang:
    """One PodGroup's binds from one cycle, committed all or nothing in the ledger."""

    podgroup: str | None  # None: pods of no PodGroup, each on its own
    binds: tuple[Bind, ...]
    requests: Mapping[str, Resources]  # by pod uid (without `pods`)
    capacities: Mapping[str, Mapping[str, Fraction]]  # by node
    view: View
    # The gang's queue and its ancestors that have a capability (nearest first), with it: the gang is
    # reserved on each, so no capability in the hierarchy is exceeded across instances.
    capped_queues: tuple[tuple[str, Mapping[str, Fraction]], ...] = ()
    # The gang's nodes the cycle planned on as another instance's (borrowed): the binder asks their
    # owner, and refuses one that became this instance's own since (the cycle may not have seen the
    # previous owner's last binds there).
    borrowed: frozenset[str] = frozenset()


def hierarchical(conf: SchedulerConf) -> bool:
    """Whether the conf enforces ancestors' capabilities (capacity with enableHierarchy); without it
    Volcano ignores `spec.parent` for capability, and so does the ledger."""
    return any(
        option.name == "capacity" and bool({**option.arguments, **option.flags}.get("enableHierarchy"))
        for tier in conf.tiers
        for option in tier.plugins
    )


def capped_queues(
    pg: PodGroupObj | None, queues: Mapping[str, QueueObj], *, tree: bool
) -> tuple[tuple[str, dict[str, Fraction]], ...]:
    """The PodGroup's queue and (in a queue tree) its ancestors, nearest first, that have a capability."""
    if pg is None:
        return ()
    if not tree:
        own = queues.get(pg.queue)
        return ((own.name, dict(own.capability)),) if own is not None and own.capability else ()
    parents = {name: q.parent or ROOT_QUEUE for name, q in queues.items() if name != ROOT_QUEUE}
    chain = (queues[name] for name in queue_chain(pg.queue, parents) if name in queues)
    return tuple((q.name, dict(q.capability)) for q in chain if q.capability)


def node_capacity(node: NodeObj) -> dict[str, Fraction]:
    return {**node.allocatable, PODS: Fraction(node.max_pods) if node.max_pods is not None else UNLIMITED_PODS}


class GangMaker:
    """A cycle's binds made into gangs, in as many parts as they come (the session streams each job's
    binds as it commits them, and the rest come at its end): what every part looks up (the pods, the
    PodGroups, the queues) is gathered once per cycle, on the first part. `nodes`: the nodes as stored,
    for their capacities (a borrowing snapshot shows others' nodes shrunk to what they have left), by
    default the snapshot's; `owns_node`: which nodes the cycle planned on as this instance's own (by
    default every one)."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        view: View,
        *,
        tree: bool,
        nodes: Mapping[str, NodeObj] | None = None,
        owns_node: Callable[[str], bool] | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._view = view
        self._tree = tree
        self._nodes = nodes
        self._owns_node = owns_node
        # Gathered on the first part. The pods by uid (a bind names its pod's uid), the unbound ones only:
        # a bind is for a pod that waits for a node.
        self._pods: dict[str, PodObj] | None = None
        self._groups: dict[str, PodGroupObj] = {}
        self._queues: dict[str, QueueObj] = {}

    def __call__(self, decisions: Iterable[Bind | Evict]) -> list[Gang]:
        """The binds among `decisions` grouped by PodGroup, each with what its commit needs. Every
        PodGroup's binds of the cycle must be in one call: a gang is committed all or nothing."""
        binds = [d for d in decisions if isinstance(d, Bind)]
        if not binds:
            return []
        snapshot = self._snapshot
        if self._pods is None:
            self._pods = {p.uid: p for p in snapshot.pods if not p.node_name}
            self._groups = {pg.key: pg for pg in snapshot.podgroups}
            self._queues = {q.name: q for q in snapshot.queues}
            self._nodes = self._nodes if self._nodes is not None else {n.name: n for n in snapshot.nodes}
        pods = {b.pod: pod for b in binds if (pod := self._pods.get(b.uid)) is not None and pod.key == b.pod}
        nodes = self._nodes
        assert nodes is not None
        by_group: dict[str | None, list[Bind]] = defaultdict(list)
        for decision in binds:
            pod = pods.get(decision.pod)
            by_group[podgroup_key(pod) if pod else None].append(decision)
        gangs = []
        owns_node = self._owns_node
        for key, grouped in by_group.items():
            requests = {b.uid: dict(pods[b.pod].requests) for b in grouped if b.pod in pods}
            capacities = {b.node: node_capacity(nodes[b.node]) for b in grouped if b.node in nodes}
            pg = self._groups.get(key) if key else None
            capped = capped_queues(pg, self._queues, tree=self._tree)
            borrowed = frozenset(b.node for b in grouped if owns_node is not None and not owns_node(b.node))
            gangs.append(
                Gang(key, tuple(grouped), requests, capacities, self._view, capped_queues=capped, borrowed=borrowed)
            )
        return gangs


def gangs_of(
    decisions: Iterable[Bind | Evict],
    snapshot: ClusterSnapshot,
    view: View,
    *,
    tree: bool,
    nodes: Mapping[str, NodeObj] | None = None,
    owns_node: Callable[[str], bool] | None = None,
) -> list[Gang]:
    """A cycle's binds grouped by PodGroup, each with what its commit needs, in one part (GangMaker)."""
    return GangMaker(snapshot, view, tree=tree, nodes=nodes, owns_node=owns_node)(decisions)

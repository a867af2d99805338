"""PURE: a cycle's binds grouped into gangs (one PodGroup's binds of one cycle), each with what its
ledger reservations need: the pods' requests, the nodes' capacities, and the capped queues above it.
The binder (binder.py) commits each gang all or nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from vc_core.resources import PODS, Resources
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.framework.decisions import Bind, Evict
from vc_sched_core.snapshot.cluster import ROOT_QUEUE, ClusterSnapshot, NodeObj, PodGroupObj, QueueObj
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


def gangs_of(
    decisions: tuple[Bind | Evict, ...],
    snapshot: ClusterSnapshot,
    view: View,
    *,
    tree: bool,
    nodes: Mapping[str, NodeObj] | None = None,
    owns_node: Callable[[str], bool] | None = None,
) -> list[Gang]:
    """The cycle's binds grouped by PodGroup, each with what its commit needs. `nodes`: the nodes as
    stored, for their capacities (a borrowing snapshot shows others' nodes shrunk to what they have
    left), by default the snapshot's; `owns_node`: which nodes the cycle planned on as this instance's
    own (by default every one)."""
    binds = [d for d in decisions if isinstance(d, Bind)]
    if not binds:
        return []
    # Only the bound pods are looked up (by uid: no key strings built for every pod of the cluster).
    uids = {b.uid for b in binds}
    by_uid = {p.uid: p for p in snapshot.pods if p.uid in uids}
    pods = {b.pod: by_uid[b.uid] for b in binds if b.uid in by_uid and by_uid[b.uid].key == b.pod}
    groups = {pg.key: pg for pg in snapshot.podgroups}
    queues = {q.name: q for q in snapshot.queues}
    nodes = nodes if nodes is not None else {n.name: n for n in snapshot.nodes}
    by_group: dict[str | None, list[Bind]] = defaultdict(list)
    for decision in binds:
        pod = pods.get(decision.pod)
        by_group[podgroup_key(pod) if pod else None].append(decision)
    gangs = []
    for key, binds in by_group.items():
        requests = {b.uid: dict(pods[b.pod].requests) for b in binds if b.pod in pods}
        capacities = {b.node: node_capacity(nodes[b.node]) for b in binds if b.node in nodes}
        pg = groups.get(key) if key else None
        capped = capped_queues(pg, queues, tree=tree)
        borrowed = frozenset(b.node for b in binds if owns_node is not None and not owns_node(b.node))
        gangs.append(Gang(key, tuple(binds), requests, capacities, view, capped_queues=capped, borrowed=borrowed))
    return gangs

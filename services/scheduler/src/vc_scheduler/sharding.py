"""PURE: one instance's share of the cluster for a cycle, and the ledger view it checks against.

Every instance sees every node and every pod (so a node's usage counts other instances' binds), but
schedules only the PodGroups it owns (rendezvous hashing over the live members). Concretely the
cycle's snapshot keeps:
- every PodGroup (so queue shares and the enqueue action see the whole cluster's demand), but only
  owned ones get their status written (the dispatcher filters);
- every bound pod, and every pending pod of an owned PodGroup;
- pending pods another instance has reserved in the ledger, as if bound to the reserved node (its
  bind is in flight), so this instance does not plan onto resources already promised;
- no other pending pods (another instance places them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from fractions import Fraction

from vc_core.ownership import rendezvous_owner
from vc_core.resources import PODS
from vc_proto.subjects import unescape_token
from vc_scheduler.ledger import PodState, Record, View, keep
from vc_scheduling.snapshot.cluster import ROOT_QUEUE, ClusterSnapshot, NodeObj, PodObj

TERMINAL = frozenset({"Succeeded", "Failed"})
UNLIMITED_PODS = Fraction(10**9)


def podgroup_key(pod: PodObj) -> str | None:
    group = pod.group_name
    return f"{pod.namespace}/{group}" if group else None


def shard_snapshot(
    snapshot: ClusterSnapshot,
    owns: Callable[[str], bool],
    reserved: Mapping[str, str],
) -> ClusterSnapshot:
    """The snapshot this instance schedules on; `reserved` maps pod uid -> node of live reservations."""
    pods: list[PodObj] = []
    for pod in snapshot.pods:
        if pod.node_name or pod.phase in TERMINAL:
            pods.append(pod)
            continue
        node = reserved.get(pod.uid)
        if node:
            pods.append(replace(pod, node_name=node))
            continue
        key = podgroup_key(pod)
        if key is None or owns(key):
            # Pods of no PodGroup are never Volcano's to schedule; keeping them costs nothing.
            pods.append(pod)
    return replace(snapshot, pods=tuple(pods))


def node_capacity(node: NodeObj) -> dict[str, Fraction]:
    return {**node.allocatable, PODS: Fraction(node.max_pods) if node.max_pods is not None else UNLIMITED_PODS}


class PodStateMemo:
    """The previous cycle's PodStates, reused for pods whose cache object is unchanged (held by the
    caller between cycles; keeps only the last cycle's, so it never outgrows the cluster)."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[PodObj, bool, str, PodState]] = {}
        self._next: dict[str, tuple[PodObj, bool, str, PodState]] = {}

    def state(self, pod: PodObj, assumed: bool, queue: str) -> PodState:
        held = self._states.get(pod.uid)
        if held is None or held[0] is not pod or held[1] != assumed or held[2] != queue:
            state = PodState(
                node="" if assumed else pod.node_name,
                terminal=pod.phase in TERMINAL,
                requests={**pod.requests, PODS: Fraction(1)},
                queue=queue,
            )
            held = (pod, assumed, queue, state)
        self._next[pod.uid] = held
        return held[3]

    def end(self) -> None:
        self._states, self._next = self._next, {}


def ledger_view(
    snapshot: ClusterSnapshot,
    *,
    gone: frozenset[str],
    live: frozenset[str],
    instance: str,
    epoch: int,
    assumed: frozenset[str] = frozenset(),
    memo: PodStateMemo | None = None,
) -> View:
    """Every pod's node, terminal state, requests and queue, by uid (the ledger's side of the cache).

    A node this instance only assumed counts as no node: the ledger must judge other instances'
    reservations by the stored binds (an assumed pod is counted through its own reservation)."""
    queue_of = {pg.key: pg.queue for pg in snapshot.podgroups}
    memo = memo if memo is not None else PodStateMemo()
    pods = {
        pod.uid: memo.state(pod, pod.key in assumed, queue_of.get(podgroup_key(pod) or "", "")) for pod in snapshot.pods
    }
    memo.end()
    parents = {q.name: q.parent or ROOT_QUEUE for q in snapshot.queues if q.name != ROOT_QUEUE}
    return View.of(pods, parents=parents, gone=gone, live=live, instance=instance, epoch=epoch)


def live_reservations(records: Iterable[tuple[str, Record]], view: View, now: float) -> dict[str, str]:
    """Pod uid -> node of the node reservations still holding resources (see ledger.keep)."""
    out: dict[str, str] = {}
    for key, record in records:
        if not key.startswith("node."):
            continue
        node = unescape_token(key.removeprefix("node."))
        for uid, res in record.reservations.items():
            if keep(uid, res, view, now, node=node):
                out[uid] = node
    return out


def owner_filter(instance: str, members: tuple[str, ...]) -> Callable[[str], bool]:
    """`owns(key)` for one cycle, memoised (rendezvous hashing is a few hashes per key)."""
    memo: dict[str, bool] = {}

    def owns(key: str) -> bool:
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = rendezvous_owner(key, members) == instance
        return hit

    return owns

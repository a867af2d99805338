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
from vc_scheduler.ledger import Record, View, keep
from vc_scheduler.ledger_view import TERMINAL, LedgerViews, podgroup_key
from vc_scheduling.snapshot.cluster import ClusterSnapshot, NodeObj, PodObj

__all__ = ["TERMINAL", "LedgerViews", "Owners", "ReservedPlacements", "podgroup_key"]
UNLIMITED_PODS = Fraction(10**9)


def shard_snapshot(
    snapshot: ClusterSnapshot,
    owns: Callable[[str], bool],
    reserved: Mapping[str, str],
) -> ClusterSnapshot:
    """The snapshot this instance schedules on; `reserved` maps pod uid -> node of live reservations."""
    return shard(snapshot, owns, reserved)[0]


def shard(
    snapshot: ClusterSnapshot,
    owns: Callable[[str], bool],
    reserved: Mapping[str, str],
    placements: ReservedPlacements | None = None,
) -> tuple[ClusterSnapshot, int]:
    """shard_snapshot, and how many pending pods it placed on a node only because of a reservation (the
    reservation may lapse with time alone: the loop keeps cycling while any does). `placements`, held by
    the caller between calls, keeps those pods the same objects while nothing about them changes."""
    placements = placements if placements is not None else ReservedPlacements()
    pods: list[PodObj] = []
    placed_by_reservation = 0
    for pod in snapshot.pods:
        if pod.node_name or pod.phase in TERMINAL:
            pods.append(pod)
            continue
        node = reserved.get(pod.uid)
        if node:
            pods.append(placements.place(pod, node))
            placed_by_reservation += 1
            continue
        key = podgroup_key(pod)
        if key is None or owns(key):
            # Pods of no PodGroup are never Volcano's to schedule; keeping them costs nothing.
            pods.append(pod)
    placements.settle()
    return replace(snapshot, pods=tuple(pods)), placed_by_reservation


class ReservedPlacements:
    """Another instance's pending pods placed on the nodes they are reserved on, carried between cycles.

    The carried state (vc_scheduling's CarriedState) patches what changed since the last cycle, telling
    a changed pod by identity; a pod copied anew each cycle would count as changed each time, and the
    session would re-derive it and rebuild its job and its node's row every cycle while the reservation
    lives (a second or two: hundreds of pods under load). So the same pod object reserved on the same
    node is given the same copy. Only the last call's placements are kept (a reservation that lapses, or
    whose pod is bound, is forgotten at the next)."""

    def __init__(self) -> None:
        self._copies: dict[str, tuple[PodObj, str, PodObj]] = {}  # uid -> (pod as stored, node, copy)
        self._used: dict[str, tuple[PodObj, str, PodObj]] = {}

    def place(self, pod: PodObj, node: str) -> PodObj:
        """`pod` as if bound to `node`: the copy made before when neither changed."""
        hit = self._copies.get(pod.uid)
        if hit is None or hit[0] is not pod or hit[1] != node:
            hit = (pod, node, replace(pod, node_name=node))
        self._used[pod.uid] = hit
        return hit[2]

    def settle(self) -> None:
        """End a shard: keep only the copies it used."""
        self._copies, self._used = self._used, {}


def node_capacity(node: NodeObj) -> dict[str, Fraction]:
    return {**node.allocatable, PODS: Fraction(node.max_pods) if node.max_pods is not None else UNLIMITED_PODS}


def ledger_view(
    snapshot: ClusterSnapshot,
    *,
    gone: frozenset[str],
    live: frozenset[str],
    instance: str,
    epoch: int,
    assumed: frozenset[str] = frozenset(),
) -> View:
    """Every pod's node, terminal state, requests and queue, by uid (the ledger's side of the cache).

    A node this instance only assumed counts as no node: the ledger must judge other instances'
    reservations by the stored binds (an assumed pod is counted through its own reservation). Built
    anew; the loop keeps a LedgerViews between cycles, which patches the previous view."""
    return LedgerViews().view(snapshot, gone=gone, live=live, instance=instance, epoch=epoch, assumed=assumed)


def live_reservations(records: Iterable[tuple[str, Record]], view: View, now: float) -> dict[str, str]:
    """Pod uid -> node of the node reservations still holding resources (see ledger.keep)."""
    out: dict[str, str] = {}
    pods = view.pods
    for key, record in records:
        if not key.startswith("node."):
            continue
        node = unescape_token(key.removeprefix("node."))
        for uid, res in record.reservations.items():
            state = pods.get(uid)
            if state is not None and (state.node or state.terminal):
                continue  # bound or finished: shard_snapshot never asks about it
            if keep(uid, res, view, now, node=node):
                out[uid] = node
    return out


def owner_filter(instance: str, members: tuple[str, ...]) -> Callable[[str], bool]:
    """`owns(key)` for one cycle, memoised (rendezvous hashing is a few hashes per key)."""
    return Owners().filter(instance, members)


class Owners:
    """owner_filter carried between cycles: the answers hold while the member list does (most cycles),
    so each key is hashed once, not once per cycle. Forgets everything when the members change, or
    when it holds more than 4x the `live` keys the caller has (the rest are deleted PodGroups')."""

    def __init__(self) -> None:
        self._members: tuple[str, ...] | None = None
        self._instance = ""
        self._memo: dict[str, bool] = {}

    def filter(self, instance: str, members: tuple[str, ...], *, live: int = 0) -> Callable[[str], bool]:
        limit = 4 * max(live, 256)
        if (instance, members) != (self._instance, self._members) or len(self._memo) > limit:
            self._instance, self._members, self._memo = instance, members, {}
        memo = self._memo

        def owns(key: str) -> bool:
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = rendezvous_owner(key, members) == instance
            return hit

        return owns

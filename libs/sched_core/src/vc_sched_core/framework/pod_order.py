"""PURE: what changed between two snapshots' pods, found without a Python step per pod.

The scheduler's cache gives every pod an `order` (its key's first arrival) that it keeps while the pod
lives, and its snapshots list the pods by it; it replaces a pod's object only when the pod changes. So
between two snapshots each pod is found by its order, and one that did not change is the very same
object: two arrays (orders, object ids) compared in NumPy tell the few that came, went or changed among
a million (the carried session state's opening, which otherwise looks at every pod each cycle).

A snapshot whose orders do not strictly increase (pods built by hand, or reordered) has no PodOrder;
its caller looks at every pod instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from vc_sched_core.snapshot.cluster import PodObj

_order_of = attrgetter("order")


@dataclass(frozen=True, slots=True)
class PodOrder:
    """A snapshot's pods with their orders and object ids (the pods are held, so no id is reused)."""

    pods: Sequence[PodObj]
    orders: np.ndarray  # int64, strictly increasing
    ids: np.ndarray  # uint64, id() of each pod object

    @classmethod
    def of(cls, pods: Sequence[PodObj]) -> PodOrder | None:
        """None when the orders do not strictly increase (then they do not identify the pods)."""
        count = len(pods)
        orders = np.fromiter(map(_order_of, pods), dtype=np.int64, count=count)
        if count > 1 and not bool(np.all(orders[1:] > orders[:-1])):
            return None
        ids = np.fromiter(map(id, pods), dtype=np.uint64, count=count)
        return cls(pods, orders, ids)


@dataclass(frozen=True, slots=True)
class PodChanges:
    changed: list[tuple[PodObj, PodObj]]  # (before, after): the same pod (order and uid), a new object
    added: list[PodObj]  # in `after`'s order; a pod whose uid changed under its order is gone and added
    removed: list[PodObj]


def changes(before: PodOrder, after: PodOrder) -> PodChanges:
    """What `after` changed of `before`."""
    old_orders, new_orders = before.orders, after.orders
    at = np.searchsorted(old_orders, new_orders)
    matched = np.zeros(len(new_orders), dtype=bool)
    if len(old_orders):
        inside = at < len(old_orders)
        matched[inside] = old_orders[at[inside]] == new_orders[inside]
    found = np.flatnonzero(matched)
    kept = np.zeros(len(old_orders), dtype=bool)
    kept[at[found]] = True
    differ = found[before.ids[at[found]] != after.ids[found]]
    old_pods, new_pods = before.pods, after.pods
    changed: list[tuple[PodObj, PodObj]] = []
    added: list[PodObj] = []
    removed = [old_pods[i] for i in np.flatnonzero(~kept).tolist()]
    for i, j in zip(differ.tolist(), at[differ].tolist(), strict=True):
        old, new = old_pods[j], new_pods[i]
        if old.uid == new.uid:
            changed.append((old, new))
        else:  # deleted and created again under the same key between the snapshots
            removed.append(old)
            added.append(new)
    added.extend(new_pods[i] for i in np.flatnonzero(~matched).tolist())
    if len(added) > 1:
        added.sort(key=_order_of)
    return PodChanges(changed, added, removed)

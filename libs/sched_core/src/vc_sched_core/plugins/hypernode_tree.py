"""The HyperNode tree over a session's node rows (Volcano's HyperNodeInfoMap, as arrays).

Each hypernode gets a boolean mask over the node rows it holds (its Node members, or the union of its
HyperNode members' masks), and each tier an array giving every node row the index of its hypernode at
that tier (-1: none). The lowest common ancestor of a node and a hypernode is then the lowest tier at
which the two arrays agree: one comparison per tier over all rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.plugins.label_selectors import selector_mask
from vc_sched_core.snapshot.cluster import HyperNodeMemberObj, HyperNodeObj

NODE = "Node"
HYPER_NODE = "HyperNode"


@dataclass(slots=True)
class HyperNodeTree:
    names: list[str]
    tiers: NDArray[np.int64]  # tier of hypernode i
    masks: NDArray[np.bool_]  # (hypernodes, node rows)
    tier_levels: list[int]  # the distinct tiers, lowest first
    at_tier: dict[int, NDArray[np.intp]] = field(default_factory=dict)  # tier -> hypernode index per row

    @property
    def empty(self) -> bool:
        return not self.names

    def lowest_holding(self, rows: NDArray[np.intp], highest_tier: int | None = None) -> int | None:
        """The index of the lowest-tier hypernode holding every row in `rows` (ties: by name), or None."""
        return self._holding(rows, [t for t in self.tier_levels if highest_tier is None or t <= highest_tier])

    def highest_holding(self, rows: NDArray[np.intp], highest_tier: int | None = None) -> int | None:
        """The index of the highest hypernode of tier <= `highest_tier` holding every row, or None."""
        allowed = [t for t in self.tier_levels if highest_tier is None or t <= highest_tier]
        return self._holding(rows, allowed[::-1])

    def _holding(self, rows: NDArray[np.intp], tiers: list[int]) -> int | None:
        for tier in tiers:
            owners = self.at_tier[tier][rows]
            if len(owners) and owners[0] >= 0 and bool(np.all(owners == owners[0])):
                return int(owners[0])
        return None

    def lca_tiers(self, hypernode: int, rows: NDArray[np.intp]) -> NDArray[np.float64]:
        """For each row, the tier of its lowest common hypernode with `hypernode` (NaN: none)."""
        out = np.full(len(rows), np.nan)
        own_tier = int(self.tiers[hypernode])
        inside = self.masks[hypernode][rows]
        out[inside] = own_tier
        for tier in self.tier_levels:
            if tier <= own_tier:
                continue
            ancestor = self._ancestor(hypernode, tier)
            if ancestor is None:
                continue
            found = np.isnan(out) & (self.at_tier[tier][rows] == ancestor)
            out[found] = tier
        return out

    def _ancestor(self, hypernode: int, tier: int) -> int | None:
        """The hypernode of `tier` holding all of `hypernode`'s nodes."""
        rows = np.flatnonzero(self.masks[hypernode])
        if len(rows) == 0:
            return None
        owners = self.at_tier[tier][rows]
        return int(owners[0]) if owners[0] >= 0 and bool(np.all(owners == owners[0])) else None


def build_tree(
    hypernodes: Sequence[HyperNodeObj], node_names: Sequence[str], node_labels: Sequence[Mapping[str, str]]
) -> HyperNodeTree:
    ordered = sorted(hypernodes, key=lambda h: (h.tier, h.name))
    index = {h.name: i for i, h in enumerate(ordered)}
    names_array = np.array(list(node_names), dtype=object)
    masks = np.zeros((len(ordered), len(node_names)), dtype=bool)
    done: dict[int, bool] = {}

    def resolve(i: int, visiting: frozenset[int]) -> None:
        if i in done:
            return
        for member in ordered[i].members:
            if member.type == NODE:
                masks[i] |= _node_member_mask(member, names_array, node_labels)
            elif member.type == HYPER_NODE:
                for child in _hypernode_members(member, index):
                    if child in visiting or child == i:  # a cycle adds nothing
                        continue
                    resolve(child, visiting | {i})
                    masks[i] |= masks[child]
        done[i] = True

    for i in range(len(ordered)):
        resolve(i, frozenset())
    tiers = np.array([h.tier for h in ordered], dtype=np.int64)
    levels = sorted({h.tier for h in ordered})
    at_tier: dict[int, NDArray[np.intp]] = {}
    for tier in levels:
        owner = np.full(len(node_names), -1, dtype=np.intp)
        for member in np.flatnonzero(tiers == tier):
            owner[masks[member] & (owner < 0)] = member  # a node in two hypernodes of a tier: the first by name
        at_tier[tier] = owner
    return HyperNodeTree([h.name for h in ordered], tiers, masks, levels, at_tier)


def _node_member_mask(
    member: HyperNodeMemberObj, names: NDArray[np.object_], labels: Sequence[Mapping[str, str]]
) -> NDArray[np.bool_]:
    if member.exact is not None:
        return np.asarray(names == member.exact, dtype=bool)
    if member.pattern is not None:
        pattern = _compiled(member.pattern)
        if pattern is None:
            return np.zeros(len(names), dtype=bool)
        return np.fromiter((pattern.search(n) is not None for n in names), dtype=bool, count=len(names))
    if member.labels is not None:
        return selector_mask(member.labels, labels)
    return np.zeros(len(names), dtype=bool)


def _hypernode_members(member: HyperNodeMemberObj, index: Mapping[str, int]) -> list[int]:
    if member.exact is not None:
        return [index[member.exact]] if member.exact in index else []
    if member.pattern is not None:
        pattern = _compiled(member.pattern)
        return [] if pattern is None else [i for name, i in index.items() if pattern.search(name)]
    return []


def _compiled(pattern: str) -> re.Pattern[str] | None:
    """Admission refuses patterns that do not compile; one stored around it selects nothing."""
    try:
        return re.compile(pattern)
    except re.error:
        return None

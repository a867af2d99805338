"""The HyperNode tree over node rows: members by exact name, regex, labels and child hypernodes; each
row's hypernode per tier; lowest common tiers (pure)."""

from __future__ import annotations

import numpy as np

from vc_sched_core.plugins.hypernode_tree import HyperNodeTree, build_tree
from vc_sched_core.snapshot.cluster import HyperNodeMemberObj, HyperNodeObj
from vc_sched_core.snapshot.kube import LabelSelector

NODES = [f"n{i}" for i in range(6)]
LABELS = [{"rack": f"r{i // 2}"} for i in range(6)]


def tree_of(*hypernodes: HyperNodeObj) -> HyperNodeTree:
    return build_tree(list(hypernodes), NODES, LABELS)


def name(tree: HyperNodeTree, index: int | None) -> str:
    assert index is not None
    return tree.names[index]


def node(**selector: object) -> HyperNodeMemberObj:
    return HyperNodeMemberObj(type="Node", **selector)  # type: ignore[arg-type]


def child(name: str) -> HyperNodeMemberObj:
    return HyperNodeMemberObj(type="HyperNode", exact=name)


RACKS = (
    HyperNodeObj("r0", 1, (node(exact="n0"), node(exact="n1"))),
    HyperNodeObj("r1", 1, (node(pattern="^n[23]$"),)),
    HyperNodeObj("r2", 1, (node(labels=LabelSelector(match_labels={"rack": "r2"})),)),
    HyperNodeObj("s0", 2, (child("r0"), child("r1"))),
    HyperNodeObj("s1", 2, (child("r2"),)),
    HyperNodeObj("top", 3, (HyperNodeMemberObj(type="HyperNode", pattern="^s"),)),
)


def test_each_selector_kind_resolves_to_its_nodes() -> None:
    tree = tree_of(*RACKS)
    members = {name: [NODES[r] for r in np.flatnonzero(tree.masks[i])] for i, name in enumerate(tree.names)}
    assert members == {
        "r0": ["n0", "n1"],
        "r1": ["n2", "n3"],
        "r2": ["n4", "n5"],
        "s0": ["n0", "n1", "n2", "n3"],
        "s1": ["n4", "n5"],
        "top": NODES,
    }
    assert tree.tier_levels == [1, 2, 3]
    assert [tree.names[i] for i in tree.at_tier[2]] == ["s0"] * 4 + ["s1"] * 2


def test_lowest_holding_respects_the_tier_bound() -> None:
    tree = tree_of(*RACKS)
    rows = np.array([0, 1])
    assert name(tree, tree.lowest_holding(rows)) == "r0"
    assert name(tree, tree.lowest_holding(np.array([1, 2]))) == "s0"
    assert tree.lowest_holding(np.array([1, 4]), highest_tier=2) is None
    assert name(tree, tree.lowest_holding(np.array([1, 4]))) == "top"


def test_lca_tiers_per_row() -> None:
    tree = tree_of(*RACKS)
    r0 = tree.names.index("r0")
    assert list(tree.lca_tiers(r0, np.arange(6))) == [1, 1, 2, 2, 3, 3]


def test_a_cycle_of_hypernodes_terminates_and_adds_nothing() -> None:
    tree = tree_of(HyperNodeObj("a", 2, (child("b"), node(exact="n0"))), HyperNodeObj("b", 2, (child("a"),)))
    assert [list(np.flatnonzero(m)) for m in tree.masks] == [[0], []]  # the edge closing the cycle is cut


def test_no_hypernodes_is_an_empty_tree() -> None:
    assert tree_of().empty


def test_highest_holding_is_the_widest_allowed_domain() -> None:
    tree = tree_of(*RACKS)
    assert name(tree, tree.highest_holding(np.array([0]), highest_tier=2)) == "s0"
    assert name(tree, tree.highest_holding(np.array([0]), highest_tier=1)) == "r0"
    assert tree.highest_holding(np.array([0, 4]), highest_tier=2) is None

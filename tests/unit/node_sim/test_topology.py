"""`--topology racks=N,spines=M`: the racks and spines node-sim builds over its nodes (pure)."""

from __future__ import annotations

import pytest

from vc_core.errors import ConfigError
from vc_node_sim.topology import RACK_LABEL, SPINE_LABEL, TopologyShape, build_topology, parse_topology
from vc_validation.hypernodes import validate_hypernode


def test_parse_accepts_both_keys_in_any_order() -> None:
    assert parse_topology("racks=4,spines=2") == TopologyShape(rack_size=4, spine_size=2)
    assert parse_topology(" spines=3 , racks=1") == TopologyShape(rack_size=1, spine_size=3)
    assert parse_topology("") is None


@pytest.mark.parametrize(
    "text",
    [
        "racks=4",
        "racks=4,spines=2,racks=1",
        "rows=2,spines=2",
        "racks=0,spines=1",
        "racks=x,spines=1",
        "racks=1001,spines=1",
    ],
)
def test_parse_refuses_what_is_not_a_shape(text: str) -> None:
    with pytest.raises(ConfigError, match="--topology"):
        parse_topology(text)


def test_ten_nodes_in_racks_of_four_under_spines_of_two() -> None:
    names = [f"node-{i}" for i in range(10)]
    topology = build_topology(names, TopologyShape(rack_size=4, spine_size=2))
    assert topology.node_labels["node-0"] == {RACK_LABEL: "rack-0", SPINE_LABEL: "spine-0"}
    assert topology.node_labels["node-7"] == {RACK_LABEL: "rack-1", SPINE_LABEL: "spine-0"}
    assert topology.node_labels["node-9"] == {RACK_LABEL: "rack-2", SPINE_LABEL: "spine-1"}  # a short last rack
    by_name = {h.metadata.name: h for h in topology.hypernodes}
    assert list(by_name) == ["rack-0", "rack-1", "rack-2", "spine-0", "spine-1"]
    rack = by_name["rack-1"].spec
    assert rack is not None and rack.tier == 1 and rack.members is not None
    (member,) = rack.members
    assert member.type == "Node"
    assert member.selector is not None and member.selector.label_match is not None
    assert member.selector.label_match.match_labels == {RACK_LABEL: "rack-1"}
    spine0, spine1 = by_name["spine-0"].spec, by_name["spine-1"].spec
    assert spine0 is not None and spine1 is not None and spine0.tier == spine1.tier == 2
    assert [
        (m.type, m.selector.exact_match.name) for m in spine0.members or [] if m.selector and m.selector.exact_match
    ] == [
        ("HyperNode", "rack-0"),
        ("HyperNode", "rack-1"),
    ]
    assert [m.selector.exact_match.name for m in spine1.members or [] if m.selector and m.selector.exact_match] == [
        "rack-2"
    ]


def test_what_node_sim_builds_passes_admission() -> None:
    topology = build_topology([f"n{i}" for i in range(30)], TopologyShape(rack_size=5, spine_size=3))
    assert all(validate_hypernode(h) == [] for h in topology.hypernodes)
    assert build_topology([], TopologyShape(rack_size=5, spine_size=3)).hypernodes == []

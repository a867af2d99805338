"""`--topology racks=N,spines=M`: the simulated nodes grouped into racks of N nodes under spines of M
racks, as Volcano HyperNodes (pure: the app stores what `build_topology` returns).

Racks are tier 1 and select their nodes by a rack label each node carries (labelMatch); spines are tier
2 and name their racks (exactMatch). Node i sits in rack i // N, rack r under spine r // M; the last rack
and spine may be short.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from vc_core.errors import ConfigError
from vc_proto.meta import LabelSelector, ObjectMeta
from vc_proto.topology import (
    TOPOLOGY_V1ALPHA1,
    ExactMatch,
    HyperNode,
    HyperNodeSpec,
    MemberSelector,
    MemberSpec,
    MemberType,
)

RACK_LABEL: Final = "topology.tephra.dev/rack"
SPINE_LABEL: Final = "topology.tephra.dev/spine"
RACK_TIER: Final = 1
SPINE_TIER: Final = 2
MAX_GROUP: Final = 1_000  # members per hypernode (vc_validation.hypernodes.MAX_MEMBERS)
_KEYS: Final = ("racks", "spines")


@dataclass(frozen=True, slots=True)
class TopologyShape:
    rack_size: int  # nodes per rack
    spine_size: int  # racks per spine


@dataclass(frozen=True, slots=True)
class Topology:
    node_labels: dict[str, dict[str, str]]  # node name -> the labels that place it
    hypernodes: list[HyperNode]  # racks first, then spines


def parse_topology(text: str) -> TopologyShape | None:
    """`racks=N,spines=M` (both whole numbers 1..1000); empty means no topology; else ConfigError."""
    if not text.strip():
        return None
    values: dict[str, int] = {}
    for part in text.split(","):
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS or key in values:
            raise ConfigError(f"--topology: expected racks=N,spines=M, got {text!r}")
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"--topology: {key} must be a whole number, got {raw!r}") from None
        if not 1 <= value <= MAX_GROUP:
            raise ConfigError(f"--topology: {key} must be between 1 and {MAX_GROUP}, got {value}")
        values[key] = value
    if set(values) != set(_KEYS):
        raise ConfigError(f"--topology: expected racks=N,spines=M, got {text!r}")
    return TopologyShape(rack_size=values["racks"], spine_size=values["spines"])


def rack_name(rack: int) -> str:
    return f"rack-{rack}"


def spine_name(spine: int) -> str:
    return f"spine-{spine}"


def build_topology(node_names: list[str], shape: TopologyShape) -> Topology:
    racks = (len(node_names) + shape.rack_size - 1) // shape.rack_size
    spines = (racks + shape.spine_size - 1) // shape.spine_size
    labels = {
        name: {
            RACK_LABEL: rack_name(i // shape.rack_size),
            SPINE_LABEL: spine_name(i // shape.rack_size // shape.spine_size),
        }
        for i, name in enumerate(node_names)
    }
    rack_objects = [
        _hypernode(
            rack_name(r),
            RACK_TIER,
            [
                MemberSpec(
                    type=MemberType.NODE,
                    selector=MemberSelector(label_match=LabelSelector(match_labels={RACK_LABEL: rack_name(r)})),
                )
            ],
        )
        for r in range(racks)
    ]
    spine_objects = [
        _hypernode(
            spine_name(s),
            SPINE_TIER,
            [
                MemberSpec(
                    type=MemberType.HYPER_NODE, selector=MemberSelector(exact_match=ExactMatch(name=rack_name(r)))
                )
                for r in range(s * shape.spine_size, min(racks, (s + 1) * shape.spine_size))
            ],
        )
        for s in range(spines)
    ]
    return Topology(node_labels=labels, hypernodes=rack_objects + spine_objects)


def _hypernode(name: str, tier: int, members: list[MemberSpec]) -> HyperNode:
    return HyperNode(
        api_version=TOPOLOGY_V1ALPHA1,
        metadata=ObjectMeta(name=name),
        spec=HyperNodeSpec(tier=tier, members=members),
    )

"""topology.volcano.sh/v1alpha1 HyperNode: every Volcano field under its Volcano name.

A HyperNode is a network domain (a rack, a spine, a switch) of tier `spec.tier`: its members are nodes
(tier-1 hypernodes, usually) or other hypernodes, each selected by exact name, by name regex, or by node
labels. Cluster-scoped, like Volcano's.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from vc_proto.base import Wire
from vc_proto.meta import LabelSelector, ObjectMeta

TOPOLOGY_V1ALPHA1: Final = "topology.volcano.sh/v1alpha1"


class MemberType(StrEnum):
    NODE = "Node"
    HYPER_NODE = "HyperNode"


class ExactMatch(Wire, frozen=True, kw_only=True):
    name: str | None = None


class RegexMatch(Wire, frozen=True, kw_only=True):
    pattern: str | None = None


class MemberSelector(Wire, frozen=True, kw_only=True):
    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: LabelSelector | None = None


class MemberSpec(Wire, frozen=True, kw_only=True):
    type: str | None = None
    selector: MemberSelector | None = None


class HyperNodeSpec(Wire, frozen=True, kw_only=True):
    tier: int | None = None
    tier_name: str | None = None
    members: list[MemberSpec] | None = None


class HyperNodeCondition(Wire, frozen=True, kw_only=True):
    type: str | None = None
    status: str | None = None
    observed_generation: int | None = None
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class HyperNodeStatus(Wire, frozen=True, kw_only=True):
    conditions: list[HyperNodeCondition] | None = None
    node_count: int | None = None


class HyperNode(Wire, frozen=True, kw_only=True, tag_field="kind", tag="HyperNode"):
    api_version: str
    metadata: ObjectMeta
    spec: HyperNodeSpec | None = None
    status: HyperNodeStatus | None = None

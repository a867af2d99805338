"""HyperNode admission: Volcano's example HyperNodes pass unchanged; each bad field is named with its rule."""

from __future__ import annotations

import msgspec
import pytest
import yaml

from vc_proto import codec
from vc_proto.topology import HyperNode
from vc_validation.context import StaticContext
from vc_validation.hypernodes import MAX_MEMBERS, MAX_TIER, validate_hypernode
from vc_validation.review import review

# Volcano's docs: a tier-1 hypernode of exact nodes, one of a regex, a tier-2 of hypernodes, and the
# label-selected variant.
EXAMPLES = """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s0
spec:
  tier: 1
  members:
  - type: Node
    selector:
      exactMatch:
        name: "node-0"
  - type: Node
    selector:
      exactMatch:
        name: "node-1"
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s1
spec:
  tier: 1
  members:
  - type: Node
    selector:
      regexMatch:
        pattern: "^node-[2-3]$"
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s2
spec:
  tier: 2
  members:
  - type: HyperNode
    selector:
      exactMatch:
        name: "s0"
  - type: HyperNode
    selector:
      exactMatch:
        name: "s1"
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: s3
spec:
  tier: 1
  tierName: leaf
  members:
  - type: Node
    selector:
      labelMatch:
        matchLabels:
          topology-rack: rack1
"""


def hypernode(spec: dict[str, object], name: str = "hn") -> HyperNode:
    raw = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}, "spec": spec}
    obj = codec.decode_object(msgspec.json.encode(raw))
    assert isinstance(obj, HyperNode)
    return obj


def rules(obj: HyperNode) -> set[tuple[str, str]]:
    return {(v.field, v.rule) for v in validate_hypernode(obj)}


def exact(name: str, kind: str = "Node") -> dict[str, object]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


@pytest.mark.parametrize("doc", [d for d in yaml.safe_load_all(EXAMPLES)])
def test_volcano_examples_are_admitted_unchanged(doc: dict[str, object]) -> None:
    obj = codec.decode_object(msgspec.json.encode(doc))
    assert isinstance(obj, HyperNode)
    verdict = review("CREATE", obj, None, StaticContext())
    assert verdict.allowed, verdict.message
    assert verdict.patched == obj
    assert msgspec.json.decode(codec.encode(obj)) == doc


def test_tier_required_and_bounded() -> None:
    assert ("spec.tier", "required") in rules(hypernode({"members": [exact("n")]}))
    assert ("spec.tier", "tier-range") in rules(hypernode({"tier": -1}))
    assert ("spec.tier", "tier-range") in rules(hypernode({"tier": MAX_TIER + 1}))
    assert rules(hypernode({"tier": MAX_TIER})) == set()


def test_member_type_must_be_node_or_hypernode() -> None:
    found = validate_hypernode(
        hypernode({"tier": 1, "members": [{"type": "Rack", "selector": {"exactMatch": {"name": "a"}}}]})
    )
    assert [(v.field, v.rule) for v in found] == [("spec.members[0].type", "member-type")]
    assert "unknown member type Rack" in found[0].message


def test_exactly_one_selector() -> None:
    none = hypernode({"tier": 1, "members": [{"type": "Node", "selector": {}}]})
    both = hypernode(
        {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "a"}}}],
        }
    )
    assert rules(none) == {("spec.members[0].selector", "member-selector")}
    assert rules(both) == {("spec.members[0].selector", "member-selector")}


def test_exact_name_required_and_valid() -> None:
    assert rules(hypernode({"tier": 1, "members": [exact("")]})) == {
        ("spec.members[0].selector.exactMatch.name", "required")
    }
    assert rules(hypernode({"tier": 1, "members": [exact("Bad_Name")]})) == {
        ("spec.members[0].selector.exactMatch.name", "member-name")
    }


@pytest.mark.parametrize("pattern", ["(", "(a+)+$", "(x*y?)*", r"(a)\1", "(?=a)b", "a" * 300])
def test_regex_that_does_not_compile_or_could_backtrack_is_refused(pattern: str) -> None:
    obj = hypernode({"tier": 1, "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": pattern}}}]})
    (violation,) = validate_hypernode(obj)
    assert violation.field == "spec.members[0].selector.regexMatch.pattern"
    assert violation.rule in {"pattern-syntax", "pattern-length"}


def test_label_match_is_for_nodes_and_needs_a_term() -> None:
    on_hypernode = hypernode(
        {"tier": 2, "members": [{"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"a": "b"}}}}]}
    )
    empty = hypernode({"tier": 1, "members": [{"type": "Node", "selector": {"labelMatch": {}}}]})
    bad_op = hypernode(
        {
            "tier": 1,
            "members": [
                {"type": "Node", "selector": {"labelMatch": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}}
            ],
        }
    )
    assert rules(on_hypernode) == {("spec.members[0].selector.labelMatch", "member-label-match")}
    assert rules(empty) == {("spec.members[0].selector.labelMatch", "required")}
    assert rules(bad_op) == {("spec.members[0].selector.labelMatch.matchExpressions[0].operator", "label-operator")}


def test_member_count_bounded() -> None:
    many = hypernode({"tier": 1, "members": [exact(f"n{i}") for i in range(MAX_MEMBERS + 1)]})
    assert rules(many) == {("spec.members", "members-count")}


def test_review_refuses_and_stores_nothing_on_update_too() -> None:
    bad = hypernode({"tier": 1, "members": [exact("")]})
    for operation in ("CREATE", "UPDATE"):
        verdict = review(operation, bad, bad, StaticContext())
        assert not verdict.allowed
        assert "member exactMatch name is required" in verdict.message
    assert review("DELETE", None, bad, StaticContext()).allowed


def test_the_kube_webhook_admits_the_examples_and_refuses_a_bad_member() -> None:
    import json

    from vc_admission.webhook import handle_review

    def answer(document: dict[str, object], operation: str = "CREATE") -> dict[str, object]:
        body = {"request": {"uid": "u-1", "operation": operation, "object": document}}
        response: dict[str, object] = handle_review("/hypernodes/validate", json.dumps(body).encode(), StaticContext())[
            "response"
        ]
        return response

    for document in yaml.safe_load_all(EXAMPLES):
        assert answer(document)["allowed"] is True
    bad = yaml.safe_load(EXAMPLES.split("---")[0])
    bad["spec"]["members"][0]["type"] = "Switch"
    refused = answer(bad, "UPDATE")
    assert refused["allowed"] is False
    assert "spec.members[0].type" in str(refused["status"]) and "unknown member type Switch" in str(refused["status"])

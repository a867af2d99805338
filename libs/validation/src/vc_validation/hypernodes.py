"""HyperNode (topology.volcano.sh) validation on CREATE and UPDATE.

Volcano's `validateHyperNode` (member type, one selector per member, exactMatch a valid name, regexMatch
a pattern that compiles) plus the CRD's rules (tier at least 0) and Tephra's bounds: how many members,
how long a pattern, how many label terms. Patterns are matched against every node name by the scheduler
and node-sim, so a pattern that could backtrack without end (a quantified group holding a quantifier,
backreferences, lookarounds: none of which Go's RE2 accepts either) is refused here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from vc_proto.meta import LabelSelector
from vc_proto.topology import HyperNode, HyperNodeSpec, MemberSpec, MemberType
from vc_validation.label_selectors import validate_label_selector
from vc_validation.names import dns1123_subdomain_errors, format_errors, validate_metadata_bounds
from vc_validation.verdict import Violation

MAX_TIER: Final = 16  # deeper than any data-centre network; bounds the scheduler's walk up the tree
MAX_TIER_NAME_LENGTH: Final = 253
MAX_MEMBERS: Final = 1_000
MAX_PATTERN_LENGTH: Final = 256
MEMBER_TYPES: Final = tuple(t.value for t in MemberType)
# Constructs RE2 (Volcano's regexp) does not have and that make Python's matcher backtrack.
_NOT_RE2 = re.compile(r"\\[1-9]|\(\?P=|\(\?<?[=!]|[*+?}]\+")
# A group closed and quantified while holding a quantifier: `(a+)+`, `(a*b?)*`, `(x{1,3}){2,}`.
_NESTED_QUANTIFIER = re.compile(r"\([^()]*[*+?}][^()]*\)[*+{]")


def validate_hypernode(hypernode: HyperNode) -> list[Violation]:
    spec = hypernode.spec
    return [
        *_name(hypernode.metadata.name or ""),
        *validate_metadata_bounds(hypernode.metadata),
        *(_spec(spec) if spec is not None else [Violation("spec", "required", "spec is required")]),
    ]


def _name(name: str) -> Iterator[Violation]:
    errors = dns1123_subdomain_errors(name)
    if errors:
        yield Violation(
            "metadata.name", "name", f"create hypernode with name {name} validate failed {format_errors(errors)}"
        )


def _spec(spec: HyperNodeSpec) -> Iterator[Violation]:
    if spec.tier is None:
        yield Violation("spec.tier", "required", "spec.tier is required")
    elif not 0 <= spec.tier <= MAX_TIER:
        yield Violation("spec.tier", "tier-range", f"must be between 0 and {MAX_TIER}, got {spec.tier}")
    if spec.tier_name is not None and len(spec.tier_name) > MAX_TIER_NAME_LENGTH:
        yield Violation("spec.tierName", "tier-name-length", f"must be no more than {MAX_TIER_NAME_LENGTH} characters")
    members = spec.members or []
    if len(members) > MAX_MEMBERS:
        yield Violation(
            "spec.members", "members-count", f"may not have more than {MAX_MEMBERS} members, got {len(members)}"
        )
        return
    for i, member in enumerate(members):
        yield from _member(member, f"spec.members[{i}]")


def _member(member: MemberSpec, path: str) -> Iterator[Violation]:
    if member.type not in MEMBER_TYPES:
        yield Violation(
            f"{path}.type", "member-type", f"unknown member type {member.type}, valid types are {list(MEMBER_TYPES)}"
        )
    selector = member.selector
    chosen = (
        []
        if selector is None
        else [
            name
            for name, value in (
                ("exactMatch", selector.exact_match),
                ("regexMatch", selector.regex_match),
                ("labelMatch", selector.label_match),
            )
            if value is not None
        ]
    )
    if len(chosen) != 1:
        message = (
            "member selector must have one of exactMatch, regexMatch or labelMatch"
            if not chosen
            else f"member selector must have only one of exactMatch, regexMatch or labelMatch, got {chosen}"
        )
        yield Violation(f"{path}.selector", "member-selector", message)
        return
    assert selector is not None
    if selector.exact_match is not None:
        yield from _exact(selector.exact_match.name or "", f"{path}.selector.exactMatch.name")
    elif selector.regex_match is not None:
        yield from _regex(selector.regex_match.pattern or "", f"{path}.selector.regexMatch.pattern")
    elif selector.label_match is not None:
        if member.type == MemberType.HYPER_NODE:
            yield Violation(
                f"{path}.selector.labelMatch",
                "member-label-match",
                "labelMatch selects nodes by their labels; a HyperNode member is selected by exactMatch or regexMatch",
            )
        yield from _labels(selector.label_match, f"{path}.selector.labelMatch")


def _exact(name: str, path: str) -> Iterator[Violation]:
    if not name:
        yield Violation(path, "required", "member exactMatch name is required")
        return
    errors = dns1123_subdomain_errors(name)
    if errors:
        yield Violation(path, "member-name", f"member exactMatch validate failed {format_errors(errors)}")


def _regex(pattern: str, path: str) -> Iterator[Violation]:
    if not pattern:
        yield Violation(path, "required", "member regexMatch pattern is required")
        return
    if len(pattern) > MAX_PATTERN_LENGTH:
        yield Violation(path, "pattern-length", f"must be no more than {MAX_PATTERN_LENGTH} characters")
        return
    if _NOT_RE2.search(pattern) or _NESTED_QUANTIFIER.search(pattern):
        yield Violation(
            path,
            "pattern-syntax",
            "member regexMatch pattern is invalid: backreferences, lookarounds, possessive and nested "
            "quantifiers are not supported",
        )
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        yield Violation(path, "pattern-syntax", f"member regexMatch pattern is invalid: {exc}")


def _labels(selector: LabelSelector, path: str) -> Iterator[Violation]:
    if not selector.match_labels and not selector.match_expressions:
        yield Violation(path, "required", "labelMatch must have matchLabels or matchExpressions")
        return
    yield from validate_label_selector(selector, path)

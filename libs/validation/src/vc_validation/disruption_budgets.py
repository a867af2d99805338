"""PodDisruptionBudget (policy/v1, or policy/v1beta1) validation on CREATE and UPDATE: Kubernetes'
`ValidatePodDisruptionBudget` rules.

- `spec.minAvailable` and `spec.maxUnavailable`: at most one of them; each an integer from 0 (at most
  int32) or a percentage from "0%" to "100%".
- `spec.selector`: a valid label selector, bounded (vc_validation.label_selectors).
- `spec.unhealthyPodEvictionPolicy`: IfHealthyBudget or AlwaysAllow when set.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from vc_proto.base import IntOrString
from vc_proto.policy import PodDisruptionBudget, PodDisruptionBudgetSpec
from vc_validation.label_selectors import validate_label_selector
from vc_validation.limits import INT32_MAX
from vc_validation.names import dns1123_subdomain_errors, format_errors, validate_metadata_bounds
from vc_validation.verdict import Violation

UNHEALTHY_POD_EVICTION_POLICIES: Final = ("IfHealthyBudget", "AlwaysAllow")
_PERCENT: Final = re.compile(r"^[0-9]{1,9}%$")


def validate_pod_disruption_budget(pdb: PodDisruptionBudget) -> list[Violation]:
    spec = pdb.spec or PodDisruptionBudgetSpec()
    return [
        *_name(pdb.metadata.name or ""),
        *validate_metadata_bounds(pdb.metadata),
        *_spec(spec),
    ]


def _name(name: str) -> Iterator[Violation]:
    errors = dns1123_subdomain_errors(name)
    if errors:
        yield Violation(
            "metadata.name", "name", f"create poddisruptionbudget with name {name} failed {format_errors(errors)}"
        )


def _spec(spec: PodDisruptionBudgetSpec) -> Iterator[Violation]:
    if spec.min_available is not None and spec.max_unavailable is not None:
        yield Violation("spec", "pdb-min-or-max", "minAvailable and maxUnavailable cannot be both set")
    if spec.min_available is not None:
        yield from _int_or_percent(spec.min_available, "spec.minAvailable")
    if spec.max_unavailable is not None:
        yield from _int_or_percent(spec.max_unavailable, "spec.maxUnavailable")
    if spec.selector is not None:
        yield from validate_label_selector(spec.selector, "spec.selector")
    policy = spec.unhealthy_pod_eviction_policy
    if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        yield Violation(
            "spec.unhealthyPodEvictionPolicy",
            "pdb-eviction-policy",
            f"unsupported value {policy[:64]!r}, valid: {list(UNHEALTHY_POD_EVICTION_POLICIES)}",
        )


def _int_or_percent(value: IntOrString, field: str) -> Iterator[Violation]:
    """Kubernetes' ValidatePositiveIntOrPercent and IsNotMoreThan100Percent, with int32's bound."""
    if isinstance(value, int):
        if not 0 <= value <= INT32_MAX:
            yield Violation(field, "int-or-percent", f"must be between 0 and {INT32_MAX}, got {value}")
        return
    if not _PERCENT.match(value):
        yield Violation(
            field, "int-or-percent", f"{value[:64]!r}: a valid percent string must be a numeric string followed by '%'"
        )
    elif int(value[:-1]) > 100:
        yield Violation(field, "int-or-percent", "must not be greater than 100%")

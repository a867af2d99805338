"""ResourceQuota (core/v1) validation on CREATE and UPDATE: Kubernetes' `ValidateResourceQuota` rules
that matter here, with Tephra's bounds.

- `spec.hard`: every name one a quota may limit (a standard quota resource such as `pods`, `cpu`,
  `requests.memory`, `limits.cpu`, `hugepages-2Mi`; or a prefixed name such as `count/pods` or
  `requests.nvidia.com/gpu`), every amount a quantity, 0 or more, whole for counted objects (`pods`,
  `count/*`); at most MAX_RESOURCE_NAMES of them, as any resource list.
- `spec.scopes` and `spec.scopeSelector`: Kubernetes' scope names and operators, bounded. The
  scheduler's resourcequota plugin does not narrow a quota by its scopes (nor does Volcano's): they
  are kept for the apiserver's semantics and for whoever reads the object.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from vc_proto.core import ResourceQuota, ResourceQuotaSpec, ScopeSelector
from vc_validation.limits import MAX_SELECTOR_TERM_VALUES, MAX_SELECTOR_TERMS
from vc_validation.names import dns1123_subdomain_errors, format_errors, qualified_name_errors, validate_metadata_bounds
from vc_validation.resource_lists import parse_resource_list
from vc_validation.verdict import Violation

# Quota names that count objects: their amounts are whole numbers (Kubernetes IsIntegerResourceName).
COUNTED_NAMES: Final = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
# Kubernetes' standard quota resources (IsStandardQuotaResourceName), hugepages aside.
STANDARD_NAMES: Final = COUNTED_NAMES | {
    "cpu",
    "memory",
    "ephemeral-storage",
    "storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
}
HUGEPAGES_PREFIXES: Final = ("hugepages-", "requests.hugepages-", "limits.hugepages-")
SCOPES: Final = (
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
)
SCOPE_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_resource_quota(quota: ResourceQuota) -> list[Violation]:
    spec = quota.spec or ResourceQuotaSpec()
    return [
        *_name(quota.metadata.name or ""),
        *validate_metadata_bounds(quota.metadata),
        *_hard(spec),
        *_scopes(spec.scopes or []),
        *(_scope_selector(spec.scope_selector) if spec.scope_selector is not None else []),
    ]


def _name(name: str) -> Iterator[Violation]:
    errors = dns1123_subdomain_errors(name)
    if errors:
        yield Violation(
            "metadata.name", "name", f"create resourcequota with name {name} failed {format_errors(errors)}"
        )


def _hard(spec: ResourceQuotaSpec) -> Iterator[Violation]:
    amounts = yield from parse_resource_list(spec.hard, "spec.hard")
    for name in spec.hard or {}:
        if problem := _name_problem(name):
            yield Violation(f"spec.hard.{name[:64]}", "quota-resource-name", problem)
    for name, amount in amounts.items():
        if (name in COUNTED_NAMES or name.startswith("count/")) and amount.denominator != 1:
            yield Violation(f"spec.hard.{name}", "quantity-integer", f"{name} counts objects: must be an integer")


def _name_problem(name: str) -> str | None:
    """Why a quota may not limit `name` (None: it may)."""
    prefix, slash, rest = name.rpartition("/")
    if not slash:
        if name in STANDARD_NAMES or (name.startswith(HUGEPAGES_PREFIXES) and not qualified_name_errors(name)):
            return None
        return f"{name!r} is not a standard quota resource (e.g. pods, cpu, requests.memory, limits.cpu, count/pods)"
    errors = dns1123_subdomain_errors(prefix) + qualified_name_errors(rest)
    return f"{name!r} is not a valid resource name {format_errors(errors)}" if errors else None


def _scopes(scopes: list[str]) -> Iterator[Violation]:
    if len(scopes) > len(SCOPES):
        yield Violation("spec.scopes", "quota-scopes", f"may not have more than {len(SCOPES)} scopes")
        return
    for i, scope in enumerate(scopes):
        if scope not in SCOPES:
            yield Violation(f"spec.scopes[{i}]", "quota-scope", f"unsupported scope {scope!r}, valid: {list(SCOPES)}")


def _scope_selector(selector: ScopeSelector) -> Iterator[Violation]:
    expressions = selector.match_expressions or []
    if len(expressions) > MAX_SELECTOR_TERMS:
        yield Violation("spec.scopeSelector", "label-terms", f"may not have more than {MAX_SELECTOR_TERMS} terms")
        return
    for i, expr in enumerate(expressions):
        at = f"spec.scopeSelector.matchExpressions[{i}]"
        values = expr.values or []
        if expr.scope_name not in SCOPES:
            yield Violation(
                f"{at}.scopeName", "quota-scope", f"unsupported scope {expr.scope_name!r}, valid: {list(SCOPES)}"
            )
        if expr.operator not in SCOPE_OPERATORS:
            yield Violation(f"{at}.operator", "label-operator", f"{expr.operator!r} is not a valid scope operator")
        elif expr.operator in ("In", "NotIn") and not values:
            yield Violation(f"{at}.values", "required", "must be specified when `operator` is 'In' or 'NotIn'")
        elif expr.operator in ("Exists", "DoesNotExist") and values:
            yield Violation(
                f"{at}.values", "forbidden", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        if len(values) > MAX_SELECTOR_TERM_VALUES:
            yield Violation(f"{at}.values", "label-values", f"may not have more than {MAX_SELECTOR_TERM_VALUES} values")

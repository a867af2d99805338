"""A metav1.LabelSelector's validity (apimachinery `ValidateLabelSelector`), bounded: how many terms, how
many values a term lists. Shared by the kinds that select pods or nodes by label."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from vc_proto.meta import LabelSelector, LabelSelectorRequirement
from vc_validation.limits import MAX_SELECTOR_TERM_VALUES, MAX_SELECTOR_TERMS
from vc_validation.names import label_violations
from vc_validation.verdict import Violation

LABEL_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector: LabelSelector, path: str) -> Iterator[Violation]:
    labels = selector.match_labels or {}
    expressions = selector.match_expressions or []
    if len(labels) + len(expressions) > MAX_SELECTOR_TERMS:
        yield Violation(path, "label-terms", f"may not have more than {MAX_SELECTOR_TERMS} terms")
        return
    yield from label_violations(labels, f"{path}.matchLabels")
    for i, expr in enumerate(expressions):
        yield from _expression(expr, f"{path}.matchExpressions[{i}]")


def _expression(expr: LabelSelectorRequirement, path: str) -> Iterator[Violation]:
    values = expr.values or []
    if not expr.key:
        yield Violation(f"{path}.key", "required", "key is required")
    if expr.operator not in LABEL_OPERATORS:
        yield Violation(
            f"{path}.operator", "label-operator", f"{expr.operator!r} is not a valid label selector operator"
        )
    elif expr.operator in ("In", "NotIn") and not values:
        yield Violation(f"{path}.values", "required", "must be specified when `operator` is 'In' or 'NotIn'")
    elif expr.operator in ("Exists", "DoesNotExist") and values:
        yield Violation(
            f"{path}.values", "forbidden", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        )
    if len(values) > MAX_SELECTOR_TERM_VALUES:
        yield Violation(f"{path}.values", "label-values", f"may not have more than {MAX_SELECTOR_TERM_VALUES} values")

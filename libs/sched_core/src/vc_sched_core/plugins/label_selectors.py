"""Kubernetes label selectors (matchLabels, matchExpressions) over one label map or, vectorised, over
many; and the namespaces a pod affinity term reaches (namespaces, namespaceSelector)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.snapshot.kube import LabelSelector, PodAffinityTerm, SelectorRequirement

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


def requirement_matches(req: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(req.key)
    match req.operator:
        case "In":
            return value is not None and value in req.values
        case "NotIn":
            return value is None or value not in req.values
        case "Exists":
            return value is not None
        case "DoesNotExist":
            return value is None
        case _:  # an operator pods do not have matches nothing (the API server refuses it anyway)
            return False


def selector_matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """None selects nothing and an empty selector everything (metav1.LabelSelectorAsSelector)."""
    if selector is None:
        return False
    if any(labels.get(key) != value for key, value in selector.match_labels.items()):
        return False
    return all(requirement_matches(req, labels) for req in selector.match_expressions)


def selector_mask(selector: LabelSelector | None, labels: Sequence[Mapping[str, str]]) -> NDArray[np.bool_]:
    """`selector_matches` for each label map, one column per key the selector reads."""
    count = len(labels)
    if selector is None:
        return np.zeros(count, dtype=bool)
    ok = np.ones(count, dtype=bool)
    for key, value in selector.match_labels.items():
        ok &= np.fromiter((m.get(key) == value for m in labels), dtype=bool, count=count)
    for req in selector.match_expressions:
        ok &= np.fromiter((requirement_matches(req, m) for m in labels), dtype=bool, count=count)
    return ok


def selector_mask_over(
    selector: LabelSelector | None,
    labels: Sequence[Mapping[str, str]],
    start: int,
    stop: int,
    candidates: Sequence[int] | None,
) -> tuple[NDArray[np.bool_], list[int]]:
    """`selector_mask` for entries [start, stop) of `labels`, testing only `candidates` (absolute
    entries; None: all); also returns the matching entries."""
    mask = np.zeros(stop - start, dtype=bool)
    if selector is None:
        return mask, []
    entries = range(start, stop) if candidates is None else candidates
    matched = [e for e in entries if selector_matches(selector, labels[e])]
    if matched:
        mask[np.asarray(matched, dtype=np.intp) - start] = True
    return mask, matched


def with_label_keys(
    selector: LabelSelector | None, keys: Sequence[str], labels: Mapping[str, str]
) -> LabelSelector | None:
    """matchLabelKeys: the selector narrowed to the incoming pod's own values of those keys."""
    if selector is None or not keys:
        return selector
    extra = tuple(SelectorRequirement(key=k, operator="In", values=(labels[k],)) for k in keys if k in labels)
    return LabelSelector(match_labels=selector.match_labels, match_expressions=(*selector.match_expressions, *extra))


class NamespaceScope:
    """Which namespaces a term reaches, with namespace labels from the snapshot (a namespace it does
    not list has only kubernetes.io/metadata.name)."""

    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]]) -> None:
        self._labels = namespace_labels

    def labels_of(self, namespace: str) -> Mapping[str, str]:
        return self._labels.get(namespace) or {NAMESPACE_NAME_LABEL: namespace}

    def reaches(self, term: PodAffinityTerm, owner_namespace: str) -> Callable[[str], bool]:
        """A test of namespace names: the term's namespaces, plus those its namespaceSelector selects
        (an empty selector: all); neither given: the owner's namespace."""
        listed = frozenset(term.namespaces)
        selector = term.namespace_selector
        if selector is None:
            allowed = listed or frozenset({owner_namespace})
            return allowed.__contains__
        if not selector.match_labels and not selector.match_expressions:
            return lambda _namespace: True
        cache: dict[str, bool] = {}

        def test(namespace: str) -> bool:
            hit = cache.get(namespace)
            if hit is None:
                hit = cache[namespace] = namespace in listed or selector_matches(selector, self.labels_of(namespace))
            return hit

        return test

"""Inter-pod affinity and anti-affinity (Kubernetes InterPodAffinity, as Volcano's predicates and
nodeorder plugins run it): the filter and the score, vectorised over node rows.

What is counted is per term, not per pod: the pods a term selects are counted per node row once
(RowCounter) and summed per topology domain with one bincount, shared by every task with the same term
(a gang's pods share their template's terms). Existing pods' terms ("carriers": the symmetry rules) are
grouped by term too, and only the groups whose selector could match the incoming pod's labels are
looked at (an index by one of their matchLabels pairs).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

import msgspec
import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.interfaces import NodeFailure
from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.plugins.label_selectors import NamespaceScope, selector_mask_over, selector_matches
from vc_sched_core.plugins.placed_pods import DomainTotals, EntryTest, PlacedPods, RowCounter, TopologyDomains
from vc_sched_core.snapshot.cluster import PodObj
from vc_sched_core.snapshot.kube import LabelSelector, PodAffinity, PodAffinityTerm, SelectorRequirement

EXISTING_ANTI_AFFINITY_REASON: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY_REASON: Final = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON: Final = "node(s) didn't match pod anti-affinity rules"
HARD_POD_AFFINITY_WEIGHT: Final = 1  # kube-scheduler's default hardPodAffinityWeight
MAX_SCORE: Final = 100.0
Rows = NDArray[np.intp]
_keys = msgspec.json.Encoder()


def required(affinity: PodAffinity | None) -> tuple[PodAffinityTerm, ...]:
    return affinity.required_during_scheduling_ignored_during_execution if affinity else ()


def has_required_terms(pod: PodObj) -> bool:
    a = pod.affinity
    return a is not None and bool(required(a.pod_affinity) or required(a.pod_anti_affinity))


def has_required_anti_affinity(pod: PodObj) -> bool:
    return pod.affinity is not None and bool(required(pod.affinity.pod_anti_affinity))


def has_scoring_terms(pod: PodObj) -> bool:
    """Terms that score other pods' nodes when this pod is placed: required affinity, preferred ones."""
    a = pod.affinity
    if a is None:
        return False
    if required(a.pod_affinity):
        return True
    return any(
        s is not None and s.preferred_during_scheduling_ignored_during_execution
        for s in (a.pod_affinity, a.pod_anti_affinity)
    )


def has_pod_terms(pod: PodObj) -> bool:
    a = pod.affinity
    return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)


def effective_selector(term: PodAffinityTerm, labels: dict[str, str]) -> LabelSelector | None:
    """The term's selector with matchLabelKeys (In) and mismatchLabelKeys (NotIn) of `labels` merged."""
    selector = term.label_selector
    if selector is None or not (term.match_label_keys or term.mismatch_label_keys):
        return selector
    extra = [
        SelectorRequirement(key=k, operator="In", values=(labels[k],)) for k in term.match_label_keys if k in labels
    ]
    extra += [
        SelectorRequirement(key=k, operator="NotIn", values=(labels[k],))
        for k in term.mismatch_label_keys
        if k in labels
    ]
    return LabelSelector(match_labels=selector.match_labels, match_expressions=(*selector.match_expressions, *extra))


@dataclass(frozen=True, slots=True)
class BoundTerm:
    """A term as its owner means it: the selector resolved against the owner's labels, the namespaces
    against the owner's namespace."""

    term: PodAffinityTerm
    selector: LabelSelector | None
    namespace: str

    @property
    def key(self) -> bytes:
        return _keys.encode(
            (self.namespace, self.term.topology_key, self.term.namespaces, self.term.namespace_selector, self.selector)
        )


def bind(term: PodAffinityTerm, pod: PodObj) -> BoundTerm:
    return BoundTerm(term, effective_selector(term, pod.labels), pod.namespace)


@dataclass(slots=True)
class CarrierGroup:
    """Placed pods that carry one term of one kind: 'anti' (required anti-affinity), 'affinity'
    (required affinity, scored with the hard weight), or preferred ones with their signed weight."""

    key: bytes
    bound: BoundTerm
    kind: str
    weight: int
    counter: RowCounter
    members: list[int] = field(default_factory=list)  # entries carrying the term, ascending


class PodAffinityIndex:
    def __init__(
        self,
        nodes: NodeTable,
        scope: NamespaceScope,
        anti_affine: Iterable[PodObj] = (),
        *,
        scoring_possible: bool = True,
    ) -> None:
        self.nodes = nodes
        # The required anti-affinity terms of the session's pods, by one of their matchLabels pairs.
        self._potential_by_label: dict[tuple[str, str], list[BoundTerm]] = {}
        self._potential_unindexed: list[BoundTerm] = []
        self._bound: dict[str, bool] = {}
        # Whether a pod of the session has a term that scores others (required affinity, preferred):
        # without one, only a pod's own preferred terms can score.
        self.scoring_possible = scoring_possible
        seen: set[bytes] = set()
        for owner in anti_affine:
            for term in required(owner.affinity.pod_anti_affinity if owner.affinity else None):
                bound = bind(term, owner)
                if bound.key in seen:
                    continue
                seen.add(bound.key)
                labels = bound.selector.match_labels if bound.selector is not None else {}
                if labels:
                    self._potential_by_label.setdefault(min(labels.items()), []).append(bound)
                else:
                    self._potential_unindexed.append(bound)
        self.scope = scope
        self.pods = PlacedPods(nodes)
        self.domains = TopologyDomains(nodes)
        self._counters: dict[bytes, RowCounter] = {}
        self._totals: dict[tuple[bytes, str], DomainTotals] = {}
        self._groups: dict[bytes, CarrierGroup] = {}
        self._by_label: dict[tuple[str, str], list[bytes]] = {}
        self._unindexed: list[bytes] = []
        self._scanned = 0
        self._reach_tests: dict[bytes, Callable[[str], bool]] = {}
        self._matching: dict[str, tuple[int, list[CarrierGroup]]] = {}
        self._scoring_groups = 0  # carrier groups that score (all but required anti-affinity)

    # -- counting ---------------------------------------------------------------------------------

    def _reaches(self, bound: BoundTerm) -> Callable[[str], bool]:
        key = bound.key
        test = self._reach_tests.get(key)
        if test is None:
            test = self._reach_tests[key] = self.scope.reaches(bound.term, bound.namespace)
        return test

    def _counter(self, key: bytes, terms: tuple[BoundTerm, ...]) -> RowCounter:
        counter = self._counters.get(key)
        if counter is None:

            def test(pods: PlacedPods, start: int, stop: int) -> NDArray[np.bool_]:
                ok = np.ones(stop - start, dtype=bool)
                for bound in terms:
                    selector = bound.selector
                    candidates = pods.candidates(selector.match_labels, start, stop) if selector is not None else []
                    part, matched = selector_mask_over(selector, pods.labels, start, stop, candidates)
                    reaches = self._reaches(bound)
                    for entry in matched:
                        if not reaches(pods.namespaces[entry]):
                            part[entry - start] = False
                    ok &= part
                return ok

            counter = self._counters[key] = RowCounter(self.pods, test)
        return counter

    def domain_totals(self, key: bytes, counter: RowCounter, topology_key: str) -> NDArray[np.int64]:
        totals = self._totals.get((key, topology_key))
        if totals is None:
            totals = self._totals[(key, topology_key)] = DomainTotals(self.domains, topology_key, counter, None)
        return totals.current()

    def per_row(self, key: bytes, counter: RowCounter, topology_key: str, rows: Rows) -> NDArray[np.int64]:
        """For each of `rows`, the count in its domain (0 without the topology label). A key with a
        domain per node (kubernetes.io/hostname) reads the rows' own counts, no sum over the cluster."""
        ids = self.domains.of(topology_key)[0]
        at = ids[rows]
        if self.domains.one_per_node(topology_key):
            return np.where(at >= 0, counter.current()[rows], 0)
        totals = self.domain_totals(key, counter, topology_key)
        return np.where(at >= 0, totals[np.maximum(at, 0)], 0)

    def _term_per_row(self, bound: BoundTerm, rows: Rows) -> NDArray[np.int64]:
        key = bound.key
        return self.per_row(key, self._counter(key, (bound,)), bound.term.topology_key, rows)

    # -- existing pods' terms -------------------------------------------------------------------------

    def _scan_carriers(self) -> None:
        pods = self.pods
        pods.sync()
        for entry in range(self._scanned, len(pods)):
            pod = pods.tasks[entry].pod
            if has_pod_terms(pod):
                for key in self._register(pod):
                    self._groups[key].members.append(entry)
        self._scanned = len(pods)

    def _register(self, pod: PodObj) -> list[bytes]:
        a = pod.affinity
        assert a is not None
        kinds: list[tuple[str, int, PodAffinityTerm]] = [("anti", 0, t) for t in required(a.pod_anti_affinity)]
        kinds += [("affinity", HARD_POD_AFFINITY_WEIGHT, t) for t in required(a.pod_affinity)]
        for source, sign in ((a.pod_affinity, 1), (a.pod_anti_affinity, -1)):
            for w in source.preferred_during_scheduling_ignored_during_execution if source else ():
                kinds.append(("preferred", sign * w.weight, w.pod_affinity_term))
        keys = []
        for kind, weight, term in kinds:
            bound = bind(term, pod)
            key = _keys.encode((kind, weight)) + bound.key
            if key not in self._groups:
                counter = RowCounter(self.pods, self._carrier_test(key))
                self._groups[key] = CarrierGroup(key, bound, kind, weight, counter)
                self._scoring_groups += kind != "anti"
                labels = bound.selector.match_labels if bound.selector is not None else {}
                if labels:
                    first = min(labels.items())
                    self._by_label.setdefault(first, []).append(key)
                else:
                    self._unindexed.append(key)
            keys.append(key)
        return keys

    def _carrier_test(self, key: bytes) -> EntryTest:
        def test(pods: PlacedPods, start: int, stop: int) -> NDArray[np.bool_]:
            self._scan_carriers_upto(stop)
            members = self._groups[key].members
            mask = np.zeros(stop - start, dtype=bool)
            inside = members[bisect_left(members, start) : bisect_left(members, stop)]
            if inside:
                mask[np.asarray(inside, dtype=np.intp) - start] = True
            return mask

        return test

    def _scan_carriers_upto(self, stop: int) -> None:
        if self._scanned < stop:
            self._scan_carriers()

    def groups_matching(self, pod: PodObj) -> list[CarrierGroup]:
        """The carrier groups whose term selects `pod` (namespace and labels); remembered per pod until
        a new group appears (groups only ever join)."""
        self._scan_carriers()
        cached = self._matching.get(pod.uid)
        if cached is not None and cached[0] == len(self._groups):
            return cached[1]
        keys = list(self._unindexed)
        for pair in pod.labels.items():
            keys.extend(self._by_label.get(pair, ()))
        out = []
        for key in keys:
            group = self._groups[key]
            bound = group.bound
            if self._reaches(bound)(pod.namespace) and selector_matches(bound.selector, pod.labels):
                out.append(group)
        self._matching[pod.uid] = (len(self._groups), out)
        return out

    def bound_by_existing(self, pod: PodObj) -> bool:
        """Whether a required anti-affinity term of some pod of the session (placed now or perhaps
        later in it) selects `pod`: a superset of the placed pods' terms that select it, known without
        looking at where pods are (the session's pods are all known when it opens)."""
        hit = self._bound.get(pod.uid)
        if hit is None:
            candidates = list(self._potential_unindexed)
            for pair in pod.labels.items():
                candidates.extend(self._potential_by_label.get(pair, ()))
            hit = self._bound[pod.uid] = any(
                self._reaches(bound)(pod.namespace) and selector_matches(bound.selector, pod.labels)
                for bound in candidates
            )
        return hit

    def _group_per_row(self, group: CarrierGroup, rows: Rows) -> NDArray[np.int64]:
        return self.per_row(group.key, group.counter, group.bound.term.topology_key, rows)

    # -- the filter ---------------------------------------------------------------------------------

    def filter(self, pod: PodObj, rows: Rows) -> list[NodeFailure]:
        """Kubernetes' order and verdicts: existing pods' anti-affinity, then the pod's affinity
        (unresolvable: evicting pods cannot create a matching one), then its anti-affinity."""
        failures = []
        existing = np.zeros(len(rows), dtype=bool)
        for group in self.groups_matching(pod):
            if group.kind != "anti":
                continue
            existing |= self._group_per_row(group, rows) > 0
        if existing.any():
            failures.append(NodeFailure(existing, EXISTING_ANTI_AFFINITY_REASON, resolvable=True))
        a = pod.affinity
        if a is None:
            return failures
        if required(a.pod_affinity):
            missing = ~self._affinity_ok(pod, rows)
            if missing.any():
                failures.append(NodeFailure(missing, AFFINITY_REASON, resolvable=False))
        anti = np.zeros(len(rows), dtype=bool)
        for term in required(a.pod_anti_affinity):
            anti |= self._term_per_row(bind(term, pod), rows) > 0
        if anti.any():
            failures.append(NodeFailure(anti, ANTI_AFFINITY_REASON, resolvable=True))
        return failures

    def _affinity_ok(self, pod: PodObj, rows: Rows) -> NDArray[np.bool_]:
        """Every term's domain on the node holds a pod matching all the terms; or, when no pod anywhere
        does and the pod matches its own terms, any node with every topology label (the first pod of
        a group with affinity to itself)."""
        bounds = tuple(bind(t, pod) for t in required(pod.affinity.pod_affinity if pod.affinity else None))
        key = b"all" + b"".join(b.key for b in bounds)
        counter = self._counter(key, bounds)
        labelled = np.ones(len(rows), dtype=bool)
        exists = np.ones(len(rows), dtype=bool)
        anywhere = False
        for bound in bounds:
            topology_key = bound.term.topology_key
            totals = self.domain_totals(key, counter, topology_key)
            anywhere |= bool(totals.any())
            at = self.domains.of(topology_key)[0][rows]
            labelled &= at >= 0
            exists &= (at >= 0) & (totals[np.maximum(at, 0)] > 0)
        if not anywhere and all(
            self._reaches(b)(pod.namespace) and selector_matches(b.selector, pod.labels) for b in bounds
        ):
            return labelled
        return labelled & exists

    # -- the score ----------------------------------------------------------------------------------

    def score(self, pod: PodObj, rows: Rows) -> NDArray[np.float64] | None:
        """Kubernetes InterPodAffinity Score normalised over `rows` (0..100); None: nothing to score."""
        a = pod.affinity
        preferred = a is not None and any(
            source is not None and source.preferred_during_scheduling_ignored_during_execution
            for source in (a.pod_affinity, a.pod_anti_affinity)
        )
        if not preferred and not self.scoring_possible:
            return None
        self._scan_carriers()
        if not preferred and not self._scoring_groups:
            return None
        raw = np.zeros(len(rows), dtype=np.float64)
        scored = False
        for source, sign in ((a.pod_affinity if a else None, 1), (a.pod_anti_affinity if a else None, -1)):
            for w in source.preferred_during_scheduling_ignored_during_execution if source else ():
                raw += sign * w.weight * self._term_per_row(bind(w.pod_affinity_term, pod), rows)
                scored = True
        for group in self.groups_matching(pod):
            if group.kind == "anti":
                continue
            raw += group.weight * self._group_per_row(group, rows)
            scored = True
        if not scored:
            return None
        low, high = (float(raw.min()), float(raw.max())) if len(raw) else (0.0, 0.0)
        if high - low <= 0:
            return np.zeros(len(rows), dtype=np.float64)
        return np.floor(MAX_SCORE * (raw - low) / (high - low))

"""Pod topology spread (Kubernetes PodTopologySpread, as Volcano's predicates and nodeorder plugins
run it): DoNotSchedule constraints filter, ScheduleAnyway constraints score; maxSkew, minDomains,
nodeAffinityPolicy, nodeTaintsPolicy and matchLabelKeys as Kubernetes defines them.

Counting is per (constraint, namespace): the matching pods per node row (RowCounter, kept up to date
placement by placement), summed per domain over the nodes the pod's policies count, with one bincount.
"""

from __future__ import annotations

import math
from typing import Final

import msgspec
import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.interfaces import NodeFailure
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.plugins.label_selectors import selector_mask_over, selector_matches, with_label_keys
from vc_sched_core.plugins.node_filters import HARD_EFFECTS, NodeLabels, first_untolerated
from vc_sched_core.plugins.placed_pods import DomainTotals, PlacedPods, RowCounter, TopologyDomains
from vc_sched_core.snapshot.cluster import PodObj
from vc_sched_core.snapshot.kube import LabelSelector, TopologySpreadConstraint

MISSING_LABEL_REASON: Final = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW_REASON: Final = "node(s) didn't match pod topology spread constraints"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"
MAX_SCORE: Final = 100
Rows = NDArray[np.intp]
_keys = msgspec.json.Encoder()


def hard_constraints(pod: PodObj) -> tuple[TopologySpreadConstraint, ...]:
    if not pod.topology_spread:  # most pods: no generator to build
        return ()
    return tuple(c for c in pod.topology_spread if c.when_unsatisfiable == DO_NOT_SCHEDULE)


def soft_constraints(pod: PodObj) -> tuple[TopologySpreadConstraint, ...]:
    if not pod.topology_spread:
        return ()
    return tuple(c for c in pod.topology_spread if c.when_unsatisfiable == SCHEDULE_ANYWAY)


class SpreadIndex:
    def __init__(self, pods: PlacedPods, domains: TopologyDomains, labels: NodeLabels) -> None:
        self.pods = pods
        self.domains = domains
        self.labels = labels
        self._counters: dict[bytes, RowCounter] = {}
        self._eligible: dict[bytes, NDArray[np.bool_]] = {}  # held for the session: their ids key the caches
        self._totals: dict[tuple[bytes, str, int], DomainTotals] = {}
        self._presence: dict[tuple[str, int], NDArray[np.bool_]] = {}

    def _counter(self, namespace: str, selector: LabelSelector | None) -> RowCounter:
        key = _keys.encode((namespace, selector))
        counter = self._counters.get(key)
        if counter is None:

            def test(pods: PlacedPods, start: int, stop: int) -> NDArray[np.bool_]:
                candidates = pods.candidates(selector.match_labels, start, stop) if selector is not None else []
                mask, matched = selector_mask_over(selector, pods.labels, start, stop, candidates)
                for entry in matched:
                    if pods.namespaces[entry] != namespace:
                        mask[entry - start] = False
                return mask

            counter = self._counters[key] = RowCounter(self.pods, test, spread=True)
        return counter

    def eligible(self, task: TaskInfo, constraints: tuple[TopologySpreadConstraint, ...]) -> NDArray[np.bool_]:
        """The nodes whose pods count: every constraint's topology label, and the pod's node affinity
        and selector (nodeAffinityPolicy Honor, the default) and taints (nodeTaintsPolicy Honor)."""
        key = task.class_key + _keys.encode(
            [(c.topology_key, c.node_affinity_policy, c.node_taints_policy) for c in constraints]
        )
        hit = self._eligible.get(key)
        if hit is None:
            ok = np.ones(len(self.labels.nodes), dtype=bool)
            for c in constraints:
                ok &= self.domains.of(c.topology_key)[0] >= 0
            if any((c.node_affinity_policy or "Honor") == "Honor" for c in constraints):
                ok &= self._node_affinity(task.pod)
            if any(c.node_taints_policy == "Honor" for c in constraints):
                tolerations = task.pod.tolerations
                ok &= np.fromiter(
                    (first_untolerated(n.taints, tolerations, HARD_EFFECTS) is None for n in self.labels.nodes),
                    dtype=bool,
                    count=len(self.labels.nodes),
                )
            hit = self._eligible[key] = ok
        return hit

    def _node_affinity(self, pod: PodObj) -> NDArray[np.bool_]:
        ok = self.labels.match_selector(pod.node_selector)
        affinity = pod.affinity.node_affinity if pod.affinity else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
        if required is not None:
            any_term = np.zeros(len(ok), dtype=bool)
            for term in required.node_selector_terms:
                any_term |= self.labels.match_term(term)
            ok &= any_term
        return ok

    def _domain_counts(
        self, pod: PodObj, c: TopologySpreadConstraint, eligible: NDArray[np.bool_]
    ) -> tuple[NDArray[np.intp], NDArray[np.int64], LabelSelector | None]:
        """(domain per row, matching pods per domain over the eligible nodes, the selector used);
        the sums are kept until a placement changes the counts."""
        selector = with_label_keys(c.label_selector, c.match_label_keys, pod.labels)
        counter = self._counter(pod.namespace, selector)
        key = (_keys.encode((pod.namespace, selector)), c.topology_key, id(eligible))
        totals = self._totals.get(key)
        if totals is None:
            totals = self._totals[key] = DomainTotals(self.domains, c.topology_key, counter, eligible)
        return self.domains.of(c.topology_key)[0], totals.current(), selector

    def _present(self, topology_key: str, eligible: NDArray[np.bool_]) -> NDArray[np.bool_]:
        key = (topology_key, id(eligible))
        hit = self._presence.get(key)
        if hit is None:
            hit = self._presence[key] = self.domains.present(topology_key, eligible)
        return hit

    def filter(self, task: TaskInfo, rows: Rows) -> list[NodeFailure]:
        pod = task.pod
        constraints = hard_constraints(pod)
        if not constraints:
            return []
        eligible = self.eligible(task, constraints)
        missing = np.zeros(len(rows), dtype=bool)
        skewed = np.zeros(len(rows), dtype=bool)
        for c in constraints:
            ids, totals, selector = self._domain_counts(pod, c, eligible)
            present = self._present(c.topology_key, eligible)
            minimum = int(totals[present].min()) if present.any() else 0
            if c.min_domains is not None and int(present.sum()) < c.min_domains:
                minimum = 0
            own = int(selector_matches(selector, pod.labels))
            at = ids[rows]
            missing |= at < 0
            skewed |= (at >= 0) & (totals[np.maximum(at, 0)] + own - minimum > c.max_skew)
        failures = []
        if missing.any():
            failures.append(NodeFailure(missing, MISSING_LABEL_REASON, resolvable=False))
        skewed &= ~missing
        if skewed.any():
            failures.append(NodeFailure(skewed, SKEW_REASON, resolvable=True))
        return failures

    def score(self, task: TaskInfo, rows: Rows) -> NDArray[np.float64] | None:
        """Kubernetes PodTopologySpread Score and NormalizeScore over the candidate `rows`: fewer
        matching pods in the node's domains scores higher; nodes without the labels score 0."""
        pod = task.pod
        constraints = soft_constraints(pod)
        if not constraints or len(rows) == 0:
            return None
        eligible = self.eligible(task, constraints)
        ignored = np.zeros(len(rows), dtype=bool)
        for c in constraints:
            ignored |= self.domains.of(c.topology_key)[0][rows] < 0
        raw = np.zeros(len(rows), dtype=np.float64)
        counted = rows[~ignored]
        for c in constraints:
            ids, totals, _ = self._domain_counts(pod, c, eligible)
            at = ids[rows]
            size = len(np.unique(ids[counted]))
            weight = math.log(size + 2)
            raw += np.where(at >= 0, totals[np.maximum(at, 0)], 0) * weight + (c.max_skew - 1)
        raw = np.round(raw)
        scores = np.zeros(len(rows), dtype=np.float64)
        if ignored.all():
            return scores
        low, high = float(raw[~ignored].min()), float(raw[~ignored].max())
        if high == 0:
            scores[~ignored] = MAX_SCORE
        else:
            scores[~ignored] = np.floor(MAX_SCORE * (high + low - raw[~ignored]) / high)
        return scores

"""predicates: can this node run this pod at all (Volcano predicates.go over the k8s filters).

Static filters (NodeUnschedulable, NodeAffinity incl. nodeSelector, TaintToleration) depend only on
the task's template and the nodes, so their verdict per node is computed once per template. The pod
count and host port checks depend on what the session has placed on the node and are evaluated per
call, vectorised. A pod mounting PersistentVolumeClaims also needs its claims bound to volumes the
node may use (volume_binding.py), part of the same static verdict. Inter-pod affinity and topology
spread look across nodes: a session whose pods use them registers the predicate as not node-local
(equivalence.py), any other keeps the node-local one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.fit_errors import NODE_SELECTOR_MISMATCH
from vc_sched_core.framework.interfaces import EventHandler, ExtensionPoint, NodeFailure, PluginArgs
from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.session_cluster import snapshot_of
from vc_sched_core.plugins.host_ports import HOST_PORTS_REASON, HostPortIndex
from vc_sched_core.plugins.node_filters import (
    HARD_EFFECTS,
    UNSCHEDULABLE_TAINT,
    NodeLabels,
    NodeSideKeys,
    first_untolerated,
    tolerates,
)
from vc_sched_core.plugins.pod_affinity import has_required_terms
from vc_sched_core.plugins.pod_topology import PodTopology, needs_topology_filter, topology_of
from vc_sched_core.plugins.topology_spread import hard_constraints
from vc_sched_core.plugins.volume_binding import VolumeIndex
from vc_sched_core.snapshot.cluster import PodObj

NAME: Final = "predicates"
UNSCHEDULABLE_REASON: Final = "node(s) were unschedulable"
AFFINITY_REASON: Final = NODE_SELECTOR_MISMATCH
POD_NUMBER_REASON: Final = "node(s) pod number exceeded"
Rows = NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class StaticVerdict:
    """Per node: 0 passes, k > 0 fails with reasons[k]."""

    codes: NDArray[np.int32]
    reasons: tuple[str, ...]
    all_pass: bool = False  # no node fails: the per-call work is the pod count only


def _flag(args: PluginArgs, key: str) -> bool:
    value = args.get(key, True)
    return value if isinstance(value, bool) else str(value).lower() == "true"


class PredicatesPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        args = dict(args or {})
        self.node_affinity = _flag(args, "predicate.NodeAffinityEnable")
        self.taint_toleration = _flag(args, "predicate.TaintTolerationEnable")
        self.node_ports = _flag(args, "predicate.NodePortsEnable")
        self.pod_affinity = _flag(args, "predicate.PodAffinityEnable")
        self.topology_spread = _flag(args, "predicate.PodTopologySpreadEnable")
        self.volume_binding = _flag(args, "predicate.VolumeBindingEnable")
        self.cache: dict[bytes, StaticVerdict] = {}
        self.node_keys = NodeSideKeys()
        self.nodes: NodeTable | None = None
        self.labels: NodeLabels | None = None
        self.ports: HostPortIndex | None = None
        self.session: Session | None = None
        self.volumes: VolumeIndex | None = None  # built on the first pod with claims
        # Pods this session evicted, by uid, and how many per node row: they no longer count against
        # the node's pod limit (Volcano's predicates plugin removes an evicted pod from its node at
        # once), though the node still holds them until they are gone.
        self.evicted: dict[str, int] = {}
        self.evicted_per_row: NDArray[np.float64] = np.zeros(0)

    def on_session_open(self, ssn: Session) -> None:
        self.session = ssn
        self.nodes = ssn.nodes
        self.labels = NodeLabels([n.obj for n in ssn.nodes.nodes])
        self.evicted, self.evicted_per_row = {}, np.zeros(len(ssn.nodes))
        ssn.add_event_handler(EventHandler(allocate=self._placed_again, deallocate=self._released))
        ssn.add_fn(ExtensionPoint.PREDICATE, NAME, self.predicate, node_local=True)
        if (self.pod_affinity or self.topology_spread) and needs_topology_filter(ssn):
            ssn.add_fn(ExtensionPoint.PREDICATE, NAME, AcrossNodes(self, ssn), part="topology")

    def _released(self, task: TaskInfo) -> None:
        """An eviction (the task Releasing on its node): the pod stops counting for the pod limit."""
        node = self.nodes.by_name.get(task.node_name) if self.nodes is not None else None
        if node is None or task.status != TaskStatus.RELEASING or task.uid in self.evicted:
            return
        self.evicted[task.uid] = node.row
        self.evicted_per_row[node.row] += 1

    def _placed_again(self, task: TaskInfo) -> None:
        """A discarded eviction puts the pod back (any other placement is not one this tracks)."""
        row = self.evicted.pop(task.uid, None)
        if row is not None:
            self.evicted_per_row[row] -= 1

    def _full(self, rows: Rows) -> NDArray[np.bool_]:
        """Rows whose pod limit the node's pods reach, pods this session evicted not counted."""
        if self.nodes is None:
            return np.zeros(len(rows), dtype=bool)
        return np.asarray(self.nodes.free_pods(rows) + self.evicted_per_row[rows] < 1, dtype=bool)

    def on_session_close(self, ssn: Session) -> None:
        self.cache.clear()
        self.evicted, self.evicted_per_row = {}, np.zeros(0)
        self.nodes = self.labels = None
        self.ports = None
        self.session = None
        self.volumes = None

    def predicate(self, task: TaskInfo, rows: Rows) -> list[NodeFailure]:
        if self.nodes is None:
            return []
        verdict = self.static_verdict(task)
        ports = self._ports_taken(task, rows)
        if verdict.all_pass:
            full = self._full(rows)
            failures = [NodeFailure(full, POD_NUMBER_REASON, resolvable=True)] if full.any() else []
            if ports is not None:
                failures.append(NodeFailure(ports, HOST_PORTS_REASON, resolvable=True))
            return failures
        codes = verdict.codes[rows]
        failures = [
            NodeFailure(codes == code, reason, resolvable=False)
            for code, reason in enumerate(verdict.reasons)
            if code > 0 and (codes == code).any()
        ]
        full = self._full(rows)
        if full.any():
            failures.append(NodeFailure(full & (codes == 0), POD_NUMBER_REASON, resolvable=True))
        if ports is not None:
            failures.append(NodeFailure(ports & (codes == 0), HOST_PORTS_REASON, resolvable=True))
        return failures

    def _ports_taken(self, task: TaskInfo, rows: Rows) -> NDArray[np.bool_] | None:
        """Rows where a host port the task asks for is taken; None when none is (or it asks for none)."""
        if not self.node_ports or not task.pod.host_ports or self.nodes is None:
            return None
        if self.ports is None:
            self.ports = HostPortIndex(self.nodes)
        taken = self.ports.conflicts(task.pod.host_ports, rows)
        return taken if taken.any() else None

    def static_verdict(self, task: TaskInfo) -> StaticVerdict:
        key = self.node_keys.of(task.class_key, task.pod)
        cached = self.cache.get(key)
        if cached is None:
            cached = self.cache[key] = self._compute(task)
        return cached

    def _compute(self, task: TaskInfo) -> StaticVerdict:
        if self.nodes is None or self.labels is None:
            raise RuntimeError("predicates used outside a session")
        nodes = [n.obj for n in self.nodes.nodes]
        codes = np.zeros(len(nodes), dtype=np.int32)
        reasons: list[str] = [""]
        pod = task.pod
        unschedulable = np.array([n.unschedulable for n in nodes], dtype=bool)
        if unschedulable.any() and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            codes[unschedulable] = len(reasons)
            reasons.append(UNSCHEDULABLE_REASON)
        if self.node_affinity:
            matched = self._affinity_matches(task)
            codes[(codes == 0) & ~matched] = len(reasons)
            reasons.append(AFFINITY_REASON)
        if self.taint_toleration:
            self._mark_taints(task, codes, reasons)
        if pod.claims and self.volume_binding:
            self._mark_volumes(pod, codes, reasons)
        return StaticVerdict(codes, tuple(reasons), all_pass=not codes.any())

    def _affinity_matches(self, task: TaskInfo) -> NDArray[np.bool_]:
        labels = self.labels
        if labels is None:
            raise RuntimeError("predicates used outside a session")
        ok = labels.match_selector(task.pod.node_selector)
        affinity = task.pod.affinity.node_affinity if task.pod.affinity else None
        required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
        if required is not None:
            any_term = np.zeros(len(ok), dtype=bool)
            for term in required.node_selector_terms:
                any_term |= labels.match_term(term)
            ok &= any_term
        return ok

    def _mark_volumes(self, pod: PodObj, codes: NDArray[np.int32], reasons: list[str]) -> None:
        """Nodes passing the other checks that the pod's volumes rule out (kube-scheduler runs
        VolumeBinding after NodeAffinity and TaintToleration)."""
        if self.labels is None or self.session is None:
            return
        if self.volumes is None:
            self.volumes = VolumeIndex(snapshot_of(self.session))
        verdict = self.volumes.check(pod, self.labels)
        if verdict is not None:
            allowed, reason = verdict
            codes[(codes == 0) & ~allowed] = len(reasons)
            reasons.append(reason)

    def _mark_taints(self, task: TaskInfo, codes: NDArray[np.int32], reasons: list[str]) -> None:
        if self.nodes is None:
            return
        by_reason: dict[str, int] = {}
        for node in self.nodes.nodes:
            if not node.obj.taints or codes[node.row] != 0:
                continue
            taint = first_untolerated(node.obj.taints, task.pod.tolerations, HARD_EFFECTS)
            if taint is None:
                continue
            reason = f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
            if reason not in by_reason:
                by_reason[reason] = len(reasons)
                reasons.append(reason)
            codes[node.row] = by_reason[reason]


class AcrossNodes:
    """The predicates that look at other nodes' pods (inter-pod affinity, topology spread), registered
    beside the node-local ones. It concerns only tasks with their own required terms or hard spread
    constraints, or that a placed pod's required anti-affinity selects: any other task passes every
    node here, so the equivalence search leaves it on the cached node-local path."""

    def __init__(self, plugin: PredicatesPlugin, ssn: Session) -> None:
        self.pod_affinity = plugin.pod_affinity
        self.topology_spread = plugin.topology_spread
        self.ssn = ssn
        self.topology: PodTopology | None = None

    def _topology(self) -> PodTopology:
        if self.topology is None:
            self.topology = topology_of(self.ssn)
        return self.topology

    def _spread_concerns(self, pod: PodObj) -> bool:
        return self.topology_spread and bool(hard_constraints(pod))

    def _affinity_concerns(self, pod: PodObj) -> bool:
        return self.pod_affinity and (has_required_terms(pod) or self._topology().affinity.bound_by_existing(pod))

    def concerns(self, task: TaskInfo) -> bool:
        pod = task.pod
        return self._spread_concerns(pod) or self._affinity_concerns(pod)

    def __call__(self, task: TaskInfo, rows: Rows) -> list[NodeFailure]:
        """Kubernetes' filter order: inter-pod affinity, then topology spread; each only for a task it
        concerns (it would pass every node for any other)."""
        failures: list[NodeFailure] = []
        pod = task.pod
        if self._affinity_concerns(pod):
            failures += self._topology().affinity.filter(pod, rows)
        if self._spread_concerns(pod):
            failures += self._topology().spread.filter(task, rows)
        return failures

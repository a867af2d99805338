"""The session's view of where pods sit, shared by the predicates and nodeorder plugins: built on first
use in a session (only a session whose pods ask for inter-pod affinity or topology spread pays for it)."""

from __future__ import annotations

from weakref import WeakKeyDictionary

from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.session_cluster import snapshot_of
from vc_sched_core.plugins.label_selectors import NamespaceScope
from vc_sched_core.plugins.node_filters import NodeLabels
from vc_sched_core.plugins.pod_affinity import (
    PodAffinityIndex,
    has_pod_terms,
    has_required_anti_affinity,
    has_required_terms,
    has_scoring_terms,
)
from vc_sched_core.plugins.topology_spread import SpreadIndex, hard_constraints

_BY_SESSION: WeakKeyDictionary[Session, PodTopology] = WeakKeyDictionary()


class PodTopology:
    def __init__(self, ssn: Session) -> None:
        labels = {ns.name: ns.labels for ns in snapshot_of(ssn).namespaces}
        tasks = _session_tasks(ssn)
        anti_affine = [t.pod for t in tasks if has_required_anti_affinity(t.pod)]
        scoring = any(has_scoring_terms(t.pod) for t in tasks)
        self.affinity = PodAffinityIndex(ssn.nodes, NamespaceScope(labels), anti_affine, scoring_possible=scoring)
        self.spread = SpreadIndex(
            self.affinity.pods, self.affinity.domains, NodeLabels([n.obj for n in ssn.nodes.nodes])
        )


def topology_of(ssn: Session) -> PodTopology:
    topology = _BY_SESSION.get(ssn)
    if topology is None:
        topology = _BY_SESSION[ssn] = PodTopology(ssn)
    return topology


def _session_tasks(ssn: Session) -> list[TaskInfo]:
    tasks = [task for job in ssn.jobs.values() for task in job.tasks.values()]
    tasks += [task for node in ssn.nodes.nodes for task in node.tasks.values() if not task.job]
    return tasks


def needs_topology_filter(ssn: Session) -> bool:
    """Whether any pod's placement depends on where other pods are: a pod with required inter-pod
    terms or DoNotSchedule spread, pending or placed (placed pods' anti-affinity binds newcomers)."""
    if ssn.pods_relate is False:  # the opening counted no pod with such terms (framework/carried.py)
        return False
    return any(has_required_terms(t.pod) or hard_constraints(t.pod) for t in _session_tasks(ssn))


def needs_topology_score(ssn: Session) -> bool:
    if ssn.pods_relate is False:
        return False
    return any(has_pod_terms(t.pod) or t.pod.topology_spread for t in _session_tasks(ssn))

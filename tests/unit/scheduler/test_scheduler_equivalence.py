"""Node answers shared per equivalence class (equivalence.py) decide exactly what a plain search decides:
the same feasible rows in the same round-robin order, the same best node, task after task while
placements change the nodes under them."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.scheduler.scheduler_builders import NOW, podgroup, snapshot
from vc_sched_core.framework.conf import load_conf
from vc_sched_core.framework.framework import open_session
from vc_sched_core.framework.interfaces import ExtensionPoint, NodeFailure
from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.node_search import find_feasible_nodes, num_feasible_nodes_to_find, select_best_node
from vc_sched_core.framework.registry import Registry
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins import in_tree_plugins

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: predicates
    arguments:
      predicate.NodeAffinityEnable: true
      predicate.TaintTolerationEnable: true
  - name: nodeorder
  - name: binpack
  - name: spread
"""
SPREAD_FIRST = CONF.replace("  - name: spread\n", "").replace(
    "  - name: nodeorder\n", "  - name: spread\n  - name: nodeorder\n"
)


class SpreadPlugin:
    """A predicate and a score that look across nodes (not node-local): no node may hold more tasks
    than the emptiest node plus two, and emptier nodes score higher relative to the candidates."""

    name = "spread"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.add_fn(ExtensionPoint.PREDICATE, self.name, self.predicate)
        ssn.add_fn(ExtensionPoint.NODE_ORDER, self.name, self.score)

    def on_session_close(self, ssn: Session) -> None:
        pass

    def predicate(self, task: TaskInfo, rows: Any) -> list[NodeFailure]:
        counts = self.ssn.nodes.pod_count
        return [NodeFailure(counts[rows] > counts.min() + 2, "too crowded")]

    def score(self, task: TaskInfo, rows: Any) -> Any:
        counts = self.ssn.nodes.pod_count[rows]
        return (counts.max() - counts) if len(rows) else np.zeros(0)


def _node(i: int, cpu: int, pods: int, zone: int, tainted: bool) -> dict[str, Any]:
    node: dict[str, Any] = {
        "kind": "Node",
        "metadata": {"name": f"n{i:03}", "labels": {"zone": f"z{zone}"}},
        "spec": {},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "8Gi", "pods": str(pods)}},
    }
    if tainted:
        node["spec"]["taints"] = [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]
    return node


def _pod(i: int, cpu: str, template: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": cpu}}}]}
    if template == 1:
        spec["nodeSelector"] = {"zone": "z1"}
    if template == 2:
        pref = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}
        spec["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 3, "preference": pref}]}
        }
    return {
        "kind": "Pod",
        "metadata": {"name": f"p-{i}", "namespace": "default", "annotations": {"scheduling.k8s.io/group-name": "g"}},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _plain_search(ssn: Session, task: TaskInfo, start: int) -> np.ndarray:
    """The search as it was before classes: chunks from `start`, resource fit then every predicate."""
    total = len(ssn.nodes)
    wanted = num_feasible_nodes_to_find(total, minimum_nodes=8)
    chunk = max(2 * wanted, 512)
    found, count, scanned = [], 0, 0
    while scanned < total and count < wanted:
        rows = (start + scanned + np.arange(min(chunk, total - scanned))) % total
        scanned += len(rows)
        fits = ssn.nodes.fits_future_idle(rows, task.resreq)
        passed = ssn.predicate(task, rows[fits]).rows
        found.append(passed)
        count += len(passed)
    return np.concatenate(found)[:wanted] if found else np.zeros(0, dtype=np.intp)


def _plain_best(ssn: Session, task: TaskInfo, rows: np.ndarray) -> int:
    idle_ok = ssn.nodes.fits_idle(rows, task.resreq)
    for group in (rows[idle_ok], rows[~idle_ok]):
        if len(group):
            return int(group[int(np.argmax(ssn.node_scores(task, group)))])
    raise AssertionError("no candidate")


nodes_strategy = st.lists(
    st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2), st.booleans()), min_size=1, max_size=40
)
tasks_strategy = st.lists(
    st.tuples(st.sampled_from(["1", "2", "500m", "3"]), st.integers(0, 2)), min_size=1, max_size=60
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes_strategy, tasks_strategy, st.sampled_from(["none", "last", "first"]))
def test_class_answers_match_a_plain_search_placement_after_placement(
    nodes: list[tuple[int, int, int, bool]], tasks: list[tuple[str, int]], spread: str
) -> None:
    """`spread` adds a plugin whose predicate and score are not node-local, after or before the
    node-local scores (the cached prefix then ends before it)."""
    objs = [_node(i, *spec) for i, spec in enumerate(nodes)]
    objs += [podgroup("g", min_member=1)] + [_pod(i, cpu, template) for i, (cpu, template) in enumerate(tasks)]
    conf_text = {"none": CONF.replace("  - name: spread\n", ""), "last": CONF, "first": SPREAD_FIRST}[spread]
    registry = in_tree_plugins().merge(Registry({"spread": lambda _args: SpreadPlugin()}))
    conf = load_conf(conf_text, known_actions=["allocate"], known_plugins=registry.names())
    ssn, _ = open_session(snapshot(*objs), conf, plugins=registry, now=NOW, uid="t")
    wanted = num_feasible_nodes_to_find(len(ssn.nodes), minimum_nodes=8)
    for task in sorted(ssn.jobs["default/g"].tasks.values(), key=lambda t: int(t.name.split("-")[1])):
        expected = _plain_search(ssn, task, ssn.next_start_row)
        # The production search samples with the default minimum; ask for the same window size here.
        got = ssn.equivalence.window(task, ssn.next_start_row, wanted)
        assert got.tolist() == expected.tolist()
        if len(got) == 0:
            assert find_feasible_nodes(ssn, task).fit_errors is not None
            continue
        ssn.next_start_row = (int(got[-1]) + 1) % len(ssn.nodes)
        best = select_best_node(ssn, task, got)
        assert best.row == _plain_best(ssn, task, got)
        status = (
            TaskStatus.ALLOCATED if ssn.nodes.fits_idle(np.array([best.row]), task.resreq)[0] else TaskStatus.PIPELINED
        )
        ssn.set_task(task, status, best.name)

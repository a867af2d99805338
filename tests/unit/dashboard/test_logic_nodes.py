"""Node allocation: requests of bound, unfinished pods against allocatable, kept up to date per change."""

from __future__ import annotations

from fractions import Fraction

from tests.unit.dashboard.dashboard_builders import node, pod
from vc_dashboard.logic.nodes import NodeUsage, cluster_allocatable, cluster_totals, node_row, pod_requests


def test_requests_are_containers_at_least_the_largest_init_plus_overhead() -> None:
    p = pod("p", requests={"cpu": "500m", "memory": "1Gi"}, init_requests={"cpu": "2"}, overhead={"cpu": "100m"})
    assert pod_requests(p) == {"cpu": Fraction(21, 10), "memory": Fraction(2**30), "pods": 1}


def test_usage_follows_a_pod_through_its_life() -> None:
    usage = NodeUsage()
    pending = pod("p", requests={"cpu": "1"})
    usage.apply(None, pending)
    assert usage.requested == {}  # not bound: holds nothing
    bound = pod("p", requests={"cpu": "1"}, node="n1", resource_version="2")
    usage.apply(pending, bound)
    assert usage.of("n1") == {"cpu": 1, "pods": 1}
    running = pod("p", requests={"cpu": "1"}, node="n1", phase="Running", resource_version="3")
    usage.apply(bound, running)
    assert usage.of("n1") == {"cpu": 1, "pods": 1}
    usage.apply(None, pod("q", requests={"cpu": "2"}, node="n1", phase="Running"))
    assert usage.of("n1") == {"cpu": 3, "pods": 2}
    done = pod("p", requests={"cpu": "1"}, node="n1", phase="Succeeded", resource_version="4")
    usage.apply(running, done)
    assert usage.of("n1") == {"cpu": 2, "pods": 1}
    usage.apply(done, None)
    usage.apply(pod("q", requests={"cpu": "2"}, node="n1", phase="Running"), None)
    assert usage.requested == {}  # nothing left behind


def test_a_pod_that_moves_leaves_its_old_node() -> None:
    usage = NodeUsage()
    first = pod("p", requests={"cpu": "1500m", "memory": "1Gi"}, node="n1", phase="Running")
    usage.apply(None, first)
    moved = pod("p", requests={"cpu": "1500m", "memory": "1Gi"}, node="n2", phase="Pending", resource_version="2")
    usage.apply(first, moved)
    assert "n1" not in usage.requested
    assert usage.of("n2") == {"cpu": Fraction(3, 2), "memory": Fraction(2**30), "pods": 1}
    assert usage.pods_on("n1") == [] and usage.pods_on("n2") == [("default", "p")]  # the node page's pods
    usage.apply(moved, None)
    assert usage.pods_on("n2") == []


def test_a_node_row_compares_requested_with_allocatable() -> None:
    row = node_row(node("n1", cpu="4", memory="8Gi", gpu="0", pods="10"), {"cpu": Fraction(6), "pods": Fraction(2)})
    assert row.ready and row.schedulable and row.name == "n1"
    assert row.pods.label == "2 / 10"
    bars = {b.resource: b for b in row.bars}
    assert list(bars) == ["cpu", "memory", "nvidia.com/gpu"]
    assert bars["cpu"].overcommitted and bars["cpu"].pct == 100.0 and bars["cpu"].label == "6 / 4"
    assert bars["memory"].pct == 0.0 and bars["memory"].label == "0 / 8Gi"
    assert not node_row(node("n2", ready=False), {}).ready


def test_cluster_totals_sum_every_node() -> None:
    nodes = [node("a", cpu="4"), node("b", cpu="8")]
    rows = [node_row(nodes[0], {"cpu": Fraction(1)}), node_row(nodes[1], {"cpu": Fraction(2)})]
    totals = {b.resource: b for b in cluster_totals(rows)}
    assert (totals["cpu"].requested, totals["cpu"].allocatable) == (3, 12)
    assert cluster_allocatable(nodes)["cpu"] == 12

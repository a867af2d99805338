"""Pure helpers of plugins and the node search, called directly with small tables."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.unit.scheduler.scheduler_builders import node, pod, podgroup, real_session, snapshot
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.framework.model import QueueInfo
from vc_sched_core.framework.node_search import find_feasible_nodes, num_feasible_nodes_to_find
from vc_sched_core.framework.resources import ResourceSpace
from vc_sched_core.plugins.binpack import binpack_scores, resource_weights
from vc_sched_core.plugins.node_filters import tolerates
from vc_sched_core.plugins.proportion import water_fill
from vc_sched_core.plugins.queue_accounts import QueueAttr
from vc_sched_core.plugins.shares import dominant_share
from vc_sched_core.plugins.sla import parse_go_duration
from vc_sched_core.snapshot.cluster import QueueObj
from vc_sched_core.snapshot.kube import Taint, Toleration

INF = float("inf")


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [(50, 50), (100, 100), (1000, 420), (5000, 500), (10_000, 500), (100_000, 5000)],
)
def test_feasible_nodes_to_find_is_volcanos_adaptive_percentage(nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(nodes) == expected


def test_feasible_search_resumes_round_robin_where_the_last_one_stopped() -> None:
    snap = snapshot(*(node(f"n{i:03}") for i in range(300)), podgroup("j"), pod("j-0", "j"), pod("j-1", "j"))
    ssn = real_session(snap, load_scheduler_conf())
    first, second = ssn.jobs["default/j"].tasks.values()
    wanted = num_feasible_nodes_to_find(300)  # 48% of 300 = 144
    found = find_feasible_nodes(ssn, first).rows
    assert list(found[:2]) == [0, 1] and len(found) == wanted
    assert find_feasible_nodes(ssn, second).rows[0] == wanted


def _attr(name: str, weight: int, request: float, *, cap: float = INF, guarantee: float = 0.0) -> QueueAttr:
    queue = QueueInfo(name, weight, QueueObj(name, weight=weight))

    def vec(value: float) -> NDArray[np.float64]:
        return np.array([value])

    return QueueAttr(queue, vec(0.0), vec(request), vec(0.0), vec(cap), vec(guarantee), vec(0.0), vec(cap))


@pytest.mark.parametrize(
    ("queues", "deserved"),
    [
        pytest.param([("a", 1, 8.0), ("b", 3, 8.0)], [2.0, 6.0], id="by-weight"),
        pytest.param([("a", 1, 1.0), ("b", 1, 8.0)], [1.0, 7.0], id="met-queue-returns-the-rest"),
        pytest.param([("a", 1, 1.0), ("b", 1, 1.0)], [1.0, 1.0], id="capped-by-request"),
    ],
)
def test_water_fill_hands_out_the_cluster_by_weight(
    queues: list[tuple[str, int, float]], deserved: list[float]
) -> None:
    attrs = [_attr(*q) for q in queues]
    water_fill(np.array([8.0]), attrs, np.array([1e-4]))
    assert [float(a.deserved[0]) for a in attrs] == pytest.approx(deserved)


def test_water_fill_respects_capability_and_guarantee() -> None:
    capped, floored = _attr("a", 3, 8.0, cap=2.0), _attr("b", 1, 8.0, guarantee=1.0)
    water_fill(np.array([8.0]), [capped, floored], np.array([1e-4]))
    assert float(capped.deserved[0]) == pytest.approx(2.0)
    assert float(floored.deserved[0]) == pytest.approx(6.0)


def test_dominant_share_is_the_largest_fraction() -> None:
    assert dominant_share(np.array([2.0, 1.0]), np.array([8.0, 2.0])) == 0.5
    assert dominant_share(np.array([0.0, 1.0]), np.array([8.0, 0.0])) == 1.0  # used but the cluster has none


def test_binpack_prefers_fuller_nodes_and_zeroes_overflow() -> None:
    space = ResourceSpace.of(["cpu", "memory"])
    ssn = real_session(snapshot(node("a", cpu="8"), node("b", cpu="8"), node("c", cpu="2")), load_scheduler_conf())
    ssn.nodes.used[0, 0] = 6.0
    weights = space.vector(resource_weights({"binpack.cpu": 1}))
    scores = binpack_scores(ssn.nodes, np.arange(3), np.array([1.0, 0.0]), weights)
    assert scores[0] == pytest.approx(7 / 8 * 100) and scores[1] == pytest.approx(1 / 8 * 100)
    overflow = binpack_scores(ssn.nodes, np.arange(3), np.array([3.0, 0.0]), weights)
    assert overflow[2] == 0.0


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration(key="k", value="v", effect="NoSchedule"), Taint(key="k", value="v", effect="NoSchedule"), True),
        (Toleration(key="k", value="x"), Taint(key="k", value="v", effect="NoSchedule"), False),
        (Toleration(key="k", operator="Exists"), Taint(key="k", value="v", effect="NoExecute"), True),
        (Toleration(operator="Exists"), Taint(key="any", effect="NoSchedule"), True),
        (Toleration(key="k", value="v", effect="NoExecute"), Taint(key="k", value="v", effect="NoSchedule"), False),
    ],
)
def test_tolerations_match_like_kubernetes(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_go_durations_parse() -> None:
    assert parse_go_duration("1h30m") == timedelta(hours=1, minutes=30)
    assert parse_go_duration("250ms") == timedelta(milliseconds=250)
    assert parse_go_duration("soon") is None


def test_tasks_of_one_template_share_the_static_predicate_verdict() -> None:
    from vc_sched_core.plugins.predicates import PredicatesPlugin

    selector = {"spec": {"nodeSelector": {"zone": "a"}}}
    objs = [node("n1"), node("n2"), podgroup("j"), pod("j-0", "j"), pod("j-1", "j"), pod("j-2", "j")]
    objs[-1] = {**objs[-1], "spec": {**objs[-1]["spec"], **selector["spec"]}}
    ssn = real_session(snapshot(*objs), load_scheduler_conf())
    plugin = PredicatesPlugin()
    plugin.on_session_open(ssn)
    same_a, same_b, other = sorted(ssn.jobs["default/j"].tasks.values(), key=lambda t: t.name)
    assert plugin.static_verdict(same_a) is plugin.static_verdict(same_b)
    assert plugin.static_verdict(other) is not plugin.static_verdict(same_a)
    assert list(plugin.static_verdict(other).codes) == [1, 1]  # no node has zone=a


def test_benchmark_cluster_schedules_every_gang_at_small_scale() -> None:
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "scheduler_session.py"
    spec = importlib.util.spec_from_file_location("scheduler_session_bench", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    from vc_sched_core.snapshot import load_objects

    _, bound = bench.run(load_objects(bench.cluster_objects(20, 5, 4)))
    assert bound == 20


@pytest.mark.parametrize("stamp", ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00", "2024-01-01T01:00:00+01:00"])
def test_sla_timestamps_compare_whatever_their_zone(stamp: str) -> None:
    from datetime import UTC, datetime

    from vc_sched_core.plugins.sla import parse_timestamp

    parsed = parse_timestamp(stamp)
    assert parsed == datetime(2024, 1, 1, tzinfo=UTC)


def test_a_search_can_start_elsewhere_and_statuses_be_limited_to_some_podgroups() -> None:
    """Instances sharing a cluster start their node search apart (run_cycle's search_start) and each
    reports only its own PodGroups' statuses (report)."""
    from vc_sched_core.cycle import run_cycle

    snap = snapshot(*(node(f"n{i}") for i in range(4)), podgroup("a"), pod("a-0", "a"), podgroup("b"), pod("b-0", "b"))
    conf = load_scheduler_conf()
    assert run_cycle(snap, conf).binds == {"default/a-0": "n0", "default/b-0": "n1"}
    later = run_cycle(snap, conf, search_start=0.5, report=lambda key: key == "default/b")
    assert later.binds == {"default/a-0": "n2", "default/b-0": "n3"}
    assert set(later.podgroups) == {"default/b"}

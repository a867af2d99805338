"""Invariants over random clusters: nodes never overcommitted, queue capability never exceeded
(allocated and admitted minResources alike), gangs placed whole or not at all."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vc_sched_core.cycle import CycleResult, apply_result, load_scheduler_conf, run_cycle
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.snapshot import ClusterSnapshot, load_objects

RESOURCES = ("cpu", "nvidia.com/gpu")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class JobSpec:
    queue: int
    min_member: int
    extra: int
    cpu: int
    gpu: int
    declare_min_resources: bool


job_specs = st.builds(
    JobSpec,
    queue=st.integers(0, 2),
    min_member=st.integers(1, 4),
    extra=st.integers(0, 2),
    cpu=st.integers(1, 3),
    gpu=st.integers(0, 1),
    declare_min_resources=st.booleans(),
)
clusters = st.tuples(
    st.lists(st.tuples(st.integers(1, 8), st.integers(0, 2)), min_size=1, max_size=4),  # nodes: cpu, gpu
    st.lists(st.one_of(st.none(), st.tuples(st.integers(1, 10), st.integers(0, 3))), min_size=3, max_size=3),
    st.lists(job_specs, min_size=1, max_size=6),
)


def _objects(nodes: list[tuple[int, int]], caps: list[tuple[int, int] | None], jobs: list[JobSpec]) -> list[Any]:
    objs: list[Any] = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": str(c), "nvidia.com/gpu": str(g)}},
        }
        for i, (c, g) in enumerate(nodes)
    ]
    for q, cap in enumerate(caps):
        spec: dict[str, Any] = {"weight": q + 1}
        if cap is not None:
            spec["capability"] = {"cpu": str(cap[0]), "nvidia.com/gpu": str(cap[1])}
        objs.append({"kind": "Queue", "metadata": {"name": f"q{q}"}, "spec": spec})
    for j, job in enumerate(jobs):
        pg_spec: dict[str, Any] = {"minMember": job.min_member, "queue": f"q{job.queue}"}
        if job.declare_min_resources:
            pg_spec["minResources"] = {
                "cpu": str(job.cpu * job.min_member),
                "nvidia.com/gpu": str(job.gpu * job.min_member),
            }
        meta = {"name": f"j{j}", "namespace": "default", "creationTimestamp": f"2024-01-01T00:00:{j:02}Z"}
        objs.append({"kind": "PodGroup", "metadata": meta, "spec": pg_spec, "status": {"phase": "Pending"}})
        for t in range(job.min_member + job.extra):
            requests = {"cpu": str(job.cpu), "nvidia.com/gpu": str(job.gpu)}
            objs.append(
                {
                    "kind": "Pod",
                    "metadata": {
                        "name": f"j{j}-{t}",
                        "namespace": "default",
                        "annotations": {"scheduling.k8s.io/group-name": f"j{j}"},
                    },
                    "spec": {"schedulerName": "volcano", "containers": [{"resources": {"requests": requests}}]},
                }
            )
    return objs


def _usage(snapshot: ClusterSnapshot, result: CycleResult, key: str) -> dict[str, dict[str, Fraction]]:
    """Σ requests of bound pods, by node (key="node") or by queue (key="queue")."""
    queue_of = {pg.key: pg.queue for pg in snapshot.podgroups}
    totals: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for pod in snapshot.pods:
        node = result.binds.get(pod.key)
        if node is None:
            continue
        owner = node if key == "node" else queue_of[f"{pod.namespace}/{pod.group_name}"]
        for name, value in pod.requests.items():
            totals[owner][name] += value
    return totals


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters)
def test_random_clusters_keep_node_queue_and_gang_invariants(cluster: tuple[Any, Any, Any]) -> None:
    nodes, caps, jobs = cluster
    snapshot = load_objects(_objects(nodes, caps, jobs))
    result = run_cycle(snapshot, load_scheduler_conf())
    for node in snapshot.nodes:
        for name, on_node in _usage(snapshot, result, "node")[node.name].items():
            assert on_node <= node.allocatable.get(name, 0), f"{node.name} overcommitted on {name}"
    for q, cap in enumerate(caps):
        if cap is None:
            continue
        limit = dict(zip(RESOURCES, cap, strict=True))
        used = _usage(snapshot, result, "queue")[f"q{q}"]
        admitted: dict[str, Fraction] = defaultdict(Fraction)
        for pg in snapshot.podgroups:
            if pg.queue == f"q{q}" and pg.min_resources and result.podgroups[pg.key].phase != "Pending":
                for name, value in pg.min_resources.items():
                    admitted[name] += value
        for name in RESOURCES:
            assert used[name] <= limit[name], f"q{q} allocated beyond its capability on {name}"
            assert admitted[name] <= limit[name], f"q{q} admitted minResources beyond its capability on {name}"
    bound_per_job: dict[str, int] = defaultdict(int)
    for pod in snapshot.pods:
        if pod.key in result.binds:
            bound_per_job[f"{pod.namespace}/{pod.group_name}"] += 1
    for pg in snapshot.podgroups:
        assert bound_per_job[pg.key] in (0,) or bound_per_job[pg.key] >= pg.min_member, f"{pg.key} placed partly"


EVICTING_CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@dataclass(frozen=True)
class RunningSpec:
    queue: int
    pods: int
    cpu: int
    priority: int
    protected: bool  # volcano.sh/preemptable: "false"


running_specs = st.builds(
    RunningSpec,
    queue=st.integers(0, 2),
    pods=st.integers(1, 4),
    cpu=st.integers(1, 2),
    priority=st.integers(0, 2),
    protected=st.booleans(),
)


def _running_objects(nodes: list[int], running: list[RunningSpec]) -> list[Any]:
    """Running jobs placed first-fit, so the starting cluster is never overcommitted."""
    free = list(nodes)
    objs: list[Any] = []
    for r, spec in enumerate(running):
        meta = {"name": f"r{r}", "namespace": "default"}
        pg = {"minMember": 1, "queue": f"q{spec.queue}", "priorityClassName": f"p{spec.priority}"}
        objs.append({"kind": "PodGroup", "metadata": meta, "spec": pg, "status": {"phase": "Running"}})
        for t in range(spec.pods):
            node = next((i for i, left in enumerate(free) if left >= spec.cpu), None)
            if node is None:
                break
            free[node] -= spec.cpu
            annotations = {"scheduling.k8s.io/group-name": f"r{r}"}
            if spec.protected:
                annotations["volcano.sh/preemptable"] = "false"
            objs.append(
                {
                    "kind": "Pod",
                    "metadata": {"name": f"r{r}-{t}", "namespace": "default", "annotations": annotations},
                    "spec": {
                        "schedulerName": "volcano",
                        "nodeName": f"n{node}",
                        "priority": spec.priority,
                        "containers": [{"resources": {"requests": {"cpu": str(spec.cpu)}}}],
                    },
                    "status": {"phase": "Running"},
                }
            )
    return objs


def _newcomers(jobs: list[tuple[int, int, int]]) -> list[Any]:
    objs: list[Any] = []
    for j, (queue, size, priority) in enumerate(jobs):
        meta = {"name": f"j{j}", "namespace": "default"}
        pg = {"minMember": size, "queue": f"q{queue}", "priorityClassName": f"p{priority}"}
        objs.append({"kind": "PodGroup", "metadata": meta, "spec": pg, "status": {"phase": "Inqueue"}})
        objs.extend(
            {
                "kind": "Pod",
                "metadata": {
                    "name": f"j{j}-{t}",
                    "namespace": "default",
                    "annotations": {"scheduling.k8s.io/group-name": f"j{j}"},
                },
                "spec": {
                    "schedulerName": "volcano",
                    "priority": priority,
                    "containers": [{"resources": {"requests": {"cpu": "1"}}}],
                },
            }
            for t in range(size)
        )
    return objs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(2, 6), min_size=1, max_size=3),
    st.lists(running_specs, min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(0, 2)), min_size=1, max_size=3),
)
def test_preempt_and_reclaim_never_evict_protected_pods_nor_overcommit(
    nodes: list[int], running: list[RunningSpec], newcomers: list[tuple[int, int, int]]
) -> None:
    objs: list[Any] = [
        {"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": str(cpu)}}}
        for i, cpu in enumerate(nodes)
    ]
    objs += [{"kind": "Queue", "metadata": {"name": f"q{q}"}, "spec": {"weight": 1}} for q in range(3)]
    objs += [{"kind": "PriorityClass", "metadata": {"name": f"p{p}"}, "value": p * 100} for p in range(3)]
    snapshot = load_objects(objs + _running_objects(nodes, running) + _newcomers(newcomers))
    result = run_cycle(snapshot, load_scheduler_conf(EVICTING_CONF))
    evicted = set(result.evictions)
    pods = {p.key: p for p in snapshot.pods}
    assert not any(pods[key].annotations.get("volcano.sh/preemptable") == "false" for key in evicted)
    assert not evicted or result.pipelined, "evictions are committed only together with a pipelined task"
    load: dict[str, Fraction] = defaultdict(Fraction)
    for pod in snapshot.pods:
        node = result.binds.get(pod.key) or (pod.node_name if pod.key not in evicted else "")
        if node:
            load[node] += pod.requests.get("cpu", Fraction(0))
    pipelined_load: dict[str, Fraction] = defaultdict(Fraction)
    for key in result.pipelined:
        pipelined_load["any"] += pods[key].requests.get("cpu", Fraction(0))
    total = sum(Fraction(cpu) for cpu in nodes)
    for i, cpu in enumerate(nodes):
        assert load[f"n{i}"] <= cpu, f"n{i} overcommitted"
    assert sum(load.values()) + pipelined_load["any"] <= total
    _assert_cycles_keep_nodes_within_capacity(snapshot, result, nodes)


def _assert_cycles_keep_nodes_within_capacity(snapshot: ClusterSnapshot, result: CycleResult, nodes: list[int]) -> None:
    """Apply the decisions and run two more cycles: running pods never exceed a node."""
    conf = load_scheduler_conf(EVICTING_CONF)
    for cycle in range(2):
        snapshot = apply_result(snapshot, result)
        load: dict[str, Fraction] = defaultdict(Fraction)
        for pod in snapshot.pods:
            if pod.node_name:
                load[pod.node_name] += pod.requests.get("cpu", Fraction(0))
        assert all(load[f"n{i}"] <= cpu for i, cpu in enumerate(nodes)), f"overcommitted after cycle {cycle + 1}"
        result = run_cycle(snapshot, conf, session_uid=f"cycle-{cycle + 2}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters)
def test_a_memo_carried_between_cycles_changes_no_decision(cluster: tuple[Any, Any, Any]) -> None:
    """Three cycles in a row (each on the cluster the previous one left), once rebuilding every task
    and once copying unchanged pods' tasks from the previous cycle: the same decisions every time."""
    conf = load_scheduler_conf()
    fresh = memoised = load_objects(_objects(*cluster))
    memo = CarriedState()
    for cycle in range(3):
        uid = f"s-{cycle}"
        expected = run_cycle(fresh, conf, session_uid=uid, now=NOW)
        got = run_cycle(memoised, conf, session_uid=uid, now=NOW, carried=memo)
        assert got.decisions == expected.decisions
        assert got.podgroups == expected.podgroups and got.pipelined == expected.pipelined
        fresh, memoised = apply_result(fresh, expected), apply_result(memoised, got)

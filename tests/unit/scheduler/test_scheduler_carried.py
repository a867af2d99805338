"""State carried between cycles (carried.py): a cycle on carried state decides exactly what a cycle on a
fresh build decides, over random runs of cycles with the cluster changing in between (pods bound,
finished, deleted, added anywhere; PodGroups, nodes, queues and priority classes changing); and the
carried state, once a session closed, is exactly a fresh build of the next snapshot."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import msgspec
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vc_sched_core.cycle import apply_result, load_scheduler_conf, run_cycle
from vc_sched_core.framework.carried import CarriedState, Opening
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.snapshot import ClusterSnapshot, load_objects
from vc_sched_core.snapshot.cluster import PriorityClassObj, QueueObj
from vc_sched_core.snapshot.kube import LabelSelector, TopologySpreadConstraint

NOW = datetime(2026, 1, 1, tzinfo=UTC)
EVICTING = """
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
  - name: binpack
"""
CPUS = ("100m", "250m", "1", "1500m", "2")


def _cluster(nodes: list[int], jobs: list[tuple[int, int, int, int, bool]]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"zone": f"z{i % 2}"}},
            "status": {"allocatable": {"cpu": str(cpu), "memory": "8Gi", "pods": "6"}},
        }
        for i, cpu in enumerate(nodes)
    ]
    objs += [{"kind": "Queue", "metadata": {"name": f"q{q}"}, "spec": {"weight": q + 1}} for q in range(2)]
    objs += [{"kind": "PriorityClass", "metadata": {"name": f"p{p}"}, "value": p * 10} for p in range(3)]
    for j, (queue, size, cpu, priority, running) in enumerate(jobs):
        meta = {"name": f"j{j}", "namespace": "ns", "creationTimestamp": f"2025-01-01T00:00:{j:02}Z"}
        spec: dict[str, Any] = {"minMember": size, "queue": f"q{queue}", "priorityClassName": f"p{priority}"}
        if j % 2:
            spec["minResources"] = {"cpu": str(size)}
        if j % 3 == 0:  # per role minimums (vcjobs set them): the gang checks count roles
            spec["minTaskMember"] = {"worker": size}
        phase = "Running" if running else "Pending"
        objs.append({"kind": "PodGroup", "metadata": meta, "spec": spec, "status": {"phase": phase}})
        for t in range(size + 1):
            pod: dict[str, Any] = {
                "kind": "Pod",
                "metadata": {
                    "name": f"j{j}-{t}",
                    "namespace": "ns",
                    "annotations": {
                        "scheduling.k8s.io/group-name": f"j{j}",
                        "volcano.sh/task-spec": "worker" if t % 4 else "ps",
                    },
                },
                "spec": {
                    "schedulerName": "volcano",
                    "priority": priority * 10,
                    "containers": [{"resources": {"requests": {"cpu": CPUS[cpu], "memory": "256Mi"}}}],
                },
                "status": {"phase": "Pending"},
            }
            if running and t < size:
                pod["spec"]["nodeName"] = f"n{(j + t) % len(nodes)}"
                pod["status"]["phase"] = "Running"
            objs.append(pod)
    return objs


def _edit(snap: ClusterSnapshot, kind: str, pick: int, serial: int) -> ClusterSnapshot:
    """One change to the cluster between cycles; every object it does not touch stays the same object."""
    pods, pgs, nodes, queues = list(snap.pods), list(snap.podgroups), list(snap.nodes), list(snap.queues)
    if kind == "finish" and pods:
        i = pick % len(pods)
        pods[i] = msgspec.structs.replace(pods[i], phase="Succeeded")
    elif kind == "delete_pod" and pods:
        del pods[pick % len(pods)]
    elif kind == "deleting" and pods:
        i = pick % len(pods)
        pods[i] = msgspec.structs.replace(pods[i], deleting=True)
    elif kind == "unbind" and pods:
        i = pick % len(pods)
        pods[i] = msgspec.structs.replace(pods[i], node_name="", phase="Pending")
    elif kind in ("new_pod", "insert_pod") and pods:
        # A new pod comes last with the next order, as in the scheduler's cache; one inserted anywhere
        # repeats its model's order (not the cache's way: the opening then compares pod by pod).
        base = pods[pick % len(pods)]
        new = msgspec.structs.replace(base, name=f"x{serial}", uid=f"x{serial}", node_name="", phase="Pending")
        if kind == "new_pod":
            new = msgspec.structs.replace(new, order=max(p.order for p in pods) + 1)
        pods.insert(pick % (len(pods) + 1) if kind == "insert_pod" else len(pods), new)
    elif kind == "recreate" and pods:  # deleted and created again under its name: its order, a new uid
        i = pick % len(pods)
        pods[i] = msgspec.structs.replace(pods[i], uid=f"r{serial}", node_name="", phase="Pending")
    elif kind == "pod_cpu" and pods:
        i = pick % len(pods)
        pods[i] = msgspec.structs.replace(pods[i], requests={**pods[i].requests, "cpu": Fraction(pick % 3 + 1, 4)})
    elif kind == "pg_min" and pgs:
        i = pick % len(pgs)
        pgs[i] = replace(pgs[i], min_member=max(1, pgs[i].min_member + (1 if pick % 2 else -1)))
    elif kind == "pg_delete" and pgs:
        del pgs[pick % len(pgs)]
    elif kind == "pg_queue" and pgs:
        i = pick % len(pgs)
        pgs[i] = replace(pgs[i], queue=("q0", "q1", "nowhere")[pick % 3])
    elif kind == "pg_inqueue" and pgs:
        i = pick % len(pgs)
        pgs[i] = replace(pgs[i], phase="Inqueue")
    elif kind == "node_cpu" and nodes:
        i = pick % len(nodes)
        nodes[i] = replace(nodes[i], allocatable={**nodes[i].allocatable, "cpu": Fraction(pick % 5 + 1)})
    elif kind == "node_label" and nodes:
        i = pick % len(nodes)
        nodes[i] = replace(nodes[i], labels={"zone": f"z{pick}"})
    elif kind == "queue_drop" and queues:
        del queues[pick % len(queues)]
    elif kind == "queue_add":
        queues.append(QueueObj(name=("q0", "q1", "nowhere")[pick % 3], weight=pick % 3 + 1))
    elif kind == "queue_cap" and queues:
        i = pick % len(queues)
        queues[i] = replace(queues[i], capability={"cpu": Fraction(pick % 7 + 2)})
    elif kind == "gpu_pod" and pods:  # a resource name no one had: the space changes (a full build)
        i = pick % len(pods)
        pods[i] = msgspec.structs.replace(pods[i], requests={**pods[i].requests, "example.com/gpu": Fraction(1)})
    elif kind == "spread" and pods:  # a pod whose placement counts others' (the topology plugins look)
        i = pick % len(pods)
        spread = TopologySpreadConstraint(
            max_skew=1, topology_key="zone", when_unsatisfiable=("DoNotSchedule", "ScheduleAnyway")[pick % 2],
            label_selector=LabelSelector(match_labels={}),
        )  # fmt: skip
        pods[i] = msgspec.structs.replace(pods[i], topology_spread=(spread,))
    elif kind == "unspread":
        pods = [msgspec.structs.replace(p, topology_spread=()) if p.topology_spread else p for p in pods]
    elif kind == "reorder":  # pods in another order: a full build
        pods.reverse()
    elif kind == "priority":
        return replace(snap, priority_classes=(*snap.priority_classes, PriorityClassObj(f"extra{serial}", pick)))
    return replace(snap, pods=tuple(pods), podgroups=tuple(pgs), nodes=tuple(nodes), queues=tuple(queues))


EDITS = (
    "finish", "delete_pod", "deleting", "unbind", "new_pod", "insert_pod", "recreate", "pod_cpu", "pg_min",
    "pg_delete", "pg_queue", "pg_inqueue", "node_cpu", "node_label", "queue_drop", "queue_add", "queue_cap",
    "gpu_pod", "reorder", "priority", "spread", "unspread", "none",
)  # fmt: skip


def _untimed(status: Any) -> Any:
    return replace(status, conditions=tuple(replace(c, transition_id="") for c in status.conditions))


def _same_opening(carried: Opening, fresh: Opening) -> None:
    """Field by field, orders included: the carried objects are what a fresh build makes."""
    assert carried.space.names == fresh.space.names
    assert carried.pods_relate == fresh.pods_relate
    a, b = carried.nodes, fresh.nodes
    for name in ("allocatable", "idle", "used", "releasing", "pipelined", "future_idle", "pod_count", "max_pods"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert [n.name for n in a.nodes] == [n.name for n in b.nodes]
    for left, right in zip(a.nodes, b.nodes, strict=True):
        assert left.obj is right.obj
        assert list(left.tasks) == list(right.tasks), left.name
    assert list(carried.jobs) == list(fresh.jobs)
    for key, job in carried.jobs.items():
        other = fresh.jobs[key]
        assert (job.phase, job.conditions, job.why, job.nodes_fit_errors) == (
            other.phase, other.conditions, other.why, other.nodes_fit_errors
        )  # fmt: skip
        assert list(job.tasks) == list(other.tasks), key
        assert {s: list(t) for s, t in job.by_status.items()} == {s: list(t) for s, t in other.by_status.items()}
        assert np.array_equal(job.allocated, other.allocated)
        assert (job.ready_task_num(), job.pending_best_effort_num()) == (
            other.ready_task_num(), other.pending_best_effort_num()
        )  # fmt: skip
        assert (job.check_task_valid(), job.check_task_ready(), job.check_task_pipelined()) == (
            other.check_task_valid(), other.check_task_ready(), other.check_task_pipelined()
        )  # fmt: skip
        for uid, task in job.tasks.items():
            twin = other.tasks[uid]
            # Every field a build sets (a task carried over from the pod's previous version included),
            # but the equivalence key, which a session sets on first use.
            fields = [f for f in TaskInfo.__struct_fields__ if f not in ("resreq", "node_class")]
            assert [getattr(task, f) for f in fields] == [getattr(twin, f) for f in fields], uid
            assert np.array_equal(task.resreq, twin.resreq)
            assert task.node_class in (None, (twin.class_key, twin.resreq.tobytes()))


clusters = st.tuples(
    st.lists(st.integers(1, 6), min_size=1, max_size=5),
    st.lists(
        st.tuples(st.integers(0, 1), st.integers(1, 3), st.integers(0, 4), st.integers(0, 2), st.booleans()),
        min_size=1,
        max_size=6,
    ),
)
edits = st.lists(
    st.tuples(
        # What of the cycle's decisions reaches the next snapshot: all of it, the pods only (the PodGroup
        # status writes are still in flight), or nothing (every bind failed and was forgotten).
        st.sampled_from(["all", "pods", "none"]),
        st.lists(st.tuples(st.sampled_from(EDITS), st.integers(0, 50)), max_size=4),
    ),
    min_size=1,
    max_size=6,
)


def _applied(snap: ClusterSnapshot, result: Any, how: str) -> ClusterSnapshot:
    if how == "none":
        return snap
    after = apply_result(snap, result)
    return after if how == "all" else replace(after, podgroups=snap.podgroups)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters, edits, st.booleans(), st.booleans())
def test_carried_state_decides_as_a_fresh_build_cycle_after_cycle(
    cluster: tuple[list[int], list[tuple[int, int, int, int, bool]]],
    changes: list[tuple[str, list[tuple[str, int]]]],
    evicting: bool,
    prepared: bool,
) -> None:
    """`prepared`: the state is also brought to the cluster as each cycle left it (as the scheduler does
    while the binder writes the cycle's binds), before the next changes come."""
    conf = load_scheduler_conf(EVICTING if evicting else None)
    snap = load_objects(_cluster(*cluster))
    memo = CarriedState()
    serial = 0
    reported: dict[str, Any] = {}  # each PodGroup's status as last reported with report_unchanged=False
    for cycle, (how, batch) in enumerate(changes):
        carried, _ = memo.opening(snap, ("volcano",))
        fresh, _ = CarriedState(keep=False).opening(snap, ("volcano",))
        _same_opening(carried, fresh)
        memo.close()
        uid = f"s-{cycle}"
        expected = run_cycle(snap, conf, session_uid=uid, now=NOW)
        got = run_cycle(snap, conf, session_uid=uid, now=NOW, carried=memo, report_unchanged=False)
        assert got.decisions == expected.decisions
        assert got.queues == expected.queues and got.pipelined == expected.pipelined
        # What was left out is what was last reported (transition ids aside); the rest is reported as is.
        for key, status in expected.podgroups.items():
            if key in got.podgroups:
                assert got.podgroups[key] == status
                reported[key] = _untimed(status)
            else:
                assert reported.get(key) == _untimed(status), key
        snap = _applied(snap, expected, how)
        if prepared:
            memo.prepare(snap, ("volcano",))
        for kind, pick in batch:
            serial += 1
            snap = _edit(snap, kind, pick, serial)


def test_an_unchanged_snapshot_rebuilds_nothing_and_a_changed_pod_only_its_job_and_node() -> None:
    snap = load_objects(_cluster([4, 4, 4], [(0, 2, 2, 0, True), (1, 2, 2, 0, True), (0, 1, 2, 0, False)]))
    memo = CarriedState()
    run_cycle(snap, load_scheduler_conf(), carried=memo)
    assert memo.rebuilt == (3, 3)  # the first opening builds everything
    run_cycle(snap, load_scheduler_conf(), carried=memo)
    assert memo.rebuilt == (0, 0)
    running = next(i for i, p in enumerate(snap.pods) if p.node_name)
    pods = list(snap.pods)
    pods[running] = msgspec.structs.replace(pods[running], phase="Succeeded")
    run_cycle(replace(snap, pods=tuple(pods)), load_scheduler_conf(), carried=memo)
    assert memo.rebuilt == (1, 1)


def test_an_opening_after_prepare_patches_only_what_changed_since() -> None:
    """What `prepare` brought in (a pod that finished) is not patched again when the next session opens
    on the same snapshot; that session decides what it would have decided without it."""
    snap = load_objects(_cluster([4, 4, 4], [(0, 2, 2, 0, True), (1, 2, 2, 0, True), (0, 1, 2, 0, False)]))
    memo, conf = CarriedState(), load_scheduler_conf()
    run_cycle(snap, conf, carried=memo)
    running = next(i for i, p in enumerate(snap.pods) if p.node_name)
    pods = list(snap.pods)
    pods[running] = msgspec.structs.replace(pods[running], phase="Succeeded")
    snap = replace(snap, pods=tuple(pods))
    memo.prepare(snap, ("volcano",))
    assert memo.rebuilt == (1, 1)
    got = run_cycle(snap, conf, session_uid="s2", now=NOW, carried=memo)
    assert memo.rebuilt == (0, 0)
    assert got.decisions == run_cycle(snap, conf, session_uid="s2", now=NOW).decisions


def test_a_gang_undone_in_one_cycle_is_judged_afresh_in_the_next() -> None:
    """Allocate places two of three pods and undoes them (the gang does not fit): the carried tasks must
    not remember that undo (Volcano's LastTransaction feeds the Unschedulable message) in the next cycle."""
    snap = load_objects(_cluster([2], [(0, 3, 2, 0, False)]))
    memo, conf = CarriedState(), load_scheduler_conf()
    for cycle in range(3):
        expected = run_cycle(snap, conf, session_uid=f"s{cycle}", now=NOW)
        got = run_cycle(snap, conf, session_uid=f"s{cycle}", now=NOW, carried=memo)
        assert got.podgroups == expected.podgroups and got.decisions == expected.decisions == ()
    assert "2 Schedulable" in expected.podgroups["ns/j0"].conditions[0].message


def test_binds_that_land_after_a_rows_tasks_are_appended_and_starting_pods_swapped_without_a_rebuild() -> None:
    """Pods are created, so ordered, before they are bound: a cycle's binds land after every task of
    their rows and are added to the rows as they are, and a pod going from Bound to Running stays where
    it is; no row is accounted again from empty, and the state is what a fresh build makes."""
    running, pending = (0, 2, 1, 0, True), (0, 2, 1, 0, False)
    objs = _cluster([8, 8, 8, 8], [running, running, pending, pending, pending, pending])
    pods = [o for o in objs if o["kind"] == "Pod" and not o["metadata"]["name"].endswith("-2")]  # whole gangs
    placed = [o for o in pods if o["spec"].get("nodeName")]
    waiting = [o for o in pods if not o["spec"].get("nodeName")]
    snap = load_objects([o for o in objs if o["kind"] != "Pod"] + placed + waiting)  # the cache's order
    conf = load_scheduler_conf()
    memo = CarriedState()
    starting: set[str] = set()
    binds = 0
    for cycle in range(6):
        result = run_cycle(snap, conf, carried=memo, now=NOW, bind_budget=2)
        binds += len(result.binds)
        after = apply_result(snap, result)
        started = tuple(msgspec.structs.replace(p, phase="Running") if p.key in starting else p for p in after.pods)
        snap, starting = replace(after, pods=started), set(result.binds)
        carried = memo.opening(snap, ("volcano",))[0]  # the next cycle's opening: its binds, its starts
        assert memo.rebuilt[1] == 0, f"cycle {cycle}: rows rebuilt"
        _same_opening(carried, CarriedState(keep=False).opening(snap, ("volcano",))[0])
        memo.close()
    assert binds == 6  # j3 waits: its PodGroup asks for two workers and has one

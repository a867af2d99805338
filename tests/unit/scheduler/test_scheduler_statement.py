"""Statement: allocate/pipeline/evict change the session; commit emits decisions; discard undoes."""

from __future__ import annotations

import numpy as np

from tests.unit.scheduler.scheduler_builders import node, pod, podgroup, real_session, snapshot
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.framework.decisions import Bind, Evict
from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.statement import Statement


def status_of(task: TaskInfo) -> TaskStatus:
    """Read the status afresh (a helper, so type narrowing does not carry over between steps)."""
    return task.status


def _session() -> Session:
    snap = snapshot(
        node("n1", cpu="4"),
        podgroup("run", phase="Running"),
        podgroup("new"),
        pod("run-0", "run", cpu="2", node_name="n1", phase="Running"),
        pod("new-0", "new", cpu="1"),
    )
    return real_session(snap, load_scheduler_conf())


def test_allocate_then_discard_restores_node_job_and_queue_books() -> None:
    ssn = _session()
    job = ssn.jobs["default/new"]
    task = next(iter(job.tasks.values()))
    n1 = ssn.nodes.by_name["n1"]
    idle_before = ssn.nodes.idle[n1.row].copy()
    stmt = Statement(ssn)
    stmt.allocate(task, n1)
    assert task.status == TaskStatus.ALLOCATED and task.node_name == "n1"
    assert ssn.nodes.idle[n1.row][0] == idle_before[0] - 1
    assert job.allocated[0] == 1
    stmt.discard()
    assert status_of(task) == TaskStatus.PENDING and task.node_name == ""
    assert np.array_equal(ssn.nodes.idle[n1.row], idle_before)
    assert job.allocated[0] == 0
    assert task.last_tx_status == TaskStatus.ALLOCATED
    assert ssn.decisions == []


def test_commit_binds_allocations_and_keeps_pipelines_in_the_session() -> None:
    ssn = _session()
    task = next(iter(ssn.jobs["default/new"].tasks.values()))
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes.by_name["n1"])
    stmt.commit()
    assert task.status == TaskStatus.BINDING
    assert ssn.decisions == [Bind("default/new-0", "default/new-0", "n1")]


def test_evict_then_discard_brings_the_task_back_running() -> None:
    ssn = _session()
    victim = next(iter(ssn.jobs["default/run"].tasks.values()))
    row = ssn.nodes.by_name["n1"].row
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")
    assert victim.status == TaskStatus.RELEASING
    assert ssn.nodes.releasing[row][0] == 2
    stmt.discard()
    assert status_of(victim) == TaskStatus.RUNNING
    assert ssn.nodes.releasing[row][0] == 0 and ssn.nodes.used[row][0] == 2


def test_pipeline_uses_future_idle_and_commit_evicts() -> None:
    ssn = _session()
    victim = next(iter(ssn.jobs["default/run"].tasks.values()))
    task = next(iter(ssn.jobs["default/new"].tasks.values()))
    n1 = ssn.nodes.by_name["n1"]
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")
    stmt.pipeline(task, n1)
    assert ssn.nodes.future_idle[n1.row][0] == 4 - 1  # 2 idle + 2 releasing - 1 pipelined
    stmt.commit()
    assert task.status == TaskStatus.PIPELINED
    assert ssn.decisions == [Evict("default/run-0", "default/run-0", "preempt")]


def test_dispatching_a_bind_leaves_the_node_as_the_allocation_left_it() -> None:
    """Allocated -> Binding on the same node is a status change only: the node's accounts, its tasks and
    pod count stay, and no row change is logged (per-class node answers need no recompute)."""
    ssn = _session()
    task = next(iter(ssn.jobs["default/new"].tasks.values()))
    n1 = ssn.nodes.by_name["n1"]
    stmt = Statement(ssn)
    stmt.allocate(task, n1)
    accounts, pods, logged = ssn.nodes.account_row(n1.row), float(ssn.nodes.pod_count[n1.row]), len(ssn.nodes.changes)
    stmt.commit()
    assert task.status == TaskStatus.BINDING and n1.tasks[task.uid] is task
    assert np.array_equal(ssn.nodes.account_row(n1.row), accounts) and ssn.nodes.pod_count[n1.row] == pods
    assert len(ssn.nodes.changes) == logged
    assert ssn.jobs["default/new"].allocated[0] == 1  # Binding still counts as allocated for the job
    ssn.set_task(task, TaskStatus.RELEASING, "n1")  # another account: the node does change
    assert len(ssn.nodes.changes) == logged + 2 and ssn.nodes.releasing[n1.row][0] == 1

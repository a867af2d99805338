"""The node table's bulk accounting (a session's opening) equals adding the tasks one by one."""

from __future__ import annotations

import numpy as np

from tests.unit.scheduler.scheduler_builders import node, pod, podgroup, snapshot
from vc_sched_core.framework.build import build_jobs_and_tasks, build_queues, resource_space
from vc_sched_core.framework.model import TaskStatus
from vc_sched_core.framework.nodes import NodeTable


def test_bulk_accounting_matches_one_by_one_for_every_status() -> None:
    snap = snapshot(
        node("n1"),
        node("n2"),
        podgroup("g", min_member=1),
        pod("run", "g", node_name="n1", phase="Running"),
        pod("bound", "g", node_name="n2"),
        pod("also", "g", cpu="2", node_name="n1", phase="Running"),
        pod("done", "g", node_name="n2", phase="Succeeded"),
    )
    space = resource_space(snap)
    bulk = NodeTable(space, snap.nodes)
    jobs = build_jobs_and_tasks(
        snap, space=space, nodes=bulk, queues=build_queues(snap), classes={}, scheduler_names=("volcano",)
    )
    tasks = {t.name: t for job in jobs.values() for t in job.tasks.values()}
    tasks["also"].status = TaskStatus.RELEASING  # one of each accounting kind
    tasks["bound"].status = TaskStatus.PIPELINED
    placed = [(bulk.by_name[t.node_name], t) for t in tasks.values() if t.name != "done"]

    one_by_one, at_once = NodeTable(space, snap.nodes), NodeTable(space, snap.nodes)
    for node_info, task in placed:
        one_by_one.add_task(one_by_one.by_name[node_info.name], task)
    at_once.add_tasks([(at_once.by_name[n.name], t) for n, t in placed])

    for matrix in ("idle", "used", "releasing", "pipelined", "future_idle", "pod_count"):
        assert np.array_equal(getattr(one_by_one, matrix), getattr(at_once, matrix)), matrix
    assert set(at_once.by_name["n1"].tasks) == set(one_by_one.by_name["n1"].tasks)
    at_once.remove_task(at_once.by_name["n1"], tasks["run"])  # what was added in bulk comes off one by one
    one_by_one.remove_task(one_by_one.by_name["n1"], tasks["run"])
    assert np.array_equal(one_by_one.idle, at_once.idle)

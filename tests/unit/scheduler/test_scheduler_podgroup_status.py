"""PodGroup phase at session close (Volcano jobStatus) and the shuffle action's victim eviction."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.unit.scheduler.scheduler_builders import FakePlugin, node, pod, podgroup, real_session, snapshot
from vc_sched_core.actions.shuffle import ShuffleAction
from vc_sched_core.cycle import load_scheduler_conf, run_cycle
from vc_sched_core.framework.decisions import Evict
from vc_sched_core.framework.framework import podgroup_phase
from vc_sched_core.framework.interfaces import ExtensionPoint
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.snapshot.cluster import PodGroupCondition


@pytest.mark.parametrize(
    ("phases", "pg_phase", "min_member", "expected"),
    [
        pytest.param(["Running", "Running"], "Inqueue", 2, "Running", id="min-member-running"),
        pytest.param(["Running", "Pending"], "Inqueue", 2, "Inqueue", id="short-of-min-stays-inqueue"),
        pytest.param(["Pending", "Pending"], "Pending", 2, "Pending", id="pending-stays-pending"),
        pytest.param(["Succeeded", "Succeeded"], "Running", 2, "Completed", id="all-finished-completed"),
        pytest.param(["Succeeded", "Running"], "Running", 2, "Running", id="some-finished-running"),
        pytest.param(["Running", "Pending"], "Running", 2, "Pending", id="lost-pods-falls-back-to-pending"),
    ],
)
def test_podgroup_phase_follows_scheduled_task_counts(
    phases: list[str], pg_phase: str, min_member: int, expected: str
) -> None:
    pods = [
        pod(f"j-{i}", "j", node_name="n1" if phase != "Pending" else "", phase=phase) for i, phase in enumerate(phases)
    ]
    ssn = real_session(
        snapshot(node("n1"), podgroup("j", min_member=min_member, phase=pg_phase), *pods), load_scheduler_conf()
    )
    assert podgroup_phase(ssn, ssn.jobs["default/j"]) == expected


def test_running_job_unschedulable_in_this_session_is_unknown() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("j", min_member=2, phase="Running"),
        pod("j-0", "j", node_name="n1", phase="Running"),
        pod("j-1", "j"),
    )
    ssn = real_session(snap, load_scheduler_conf())
    job = ssn.jobs["default/j"]
    ssn.update_podgroup_condition(
        job, PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "", "old-session")
    )
    assert podgroup_phase(ssn, job) == "Pending"  # a condition from an earlier session does not count
    ssn.update_podgroup_condition(job, PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "", ssn.uid))
    assert podgroup_phase(ssn, job) == "Unknown"


def test_shuffle_evicts_what_victim_tasks_plugins_choose() -> None:
    snap = snapshot(
        node("n1"),
        podgroup("j", min_member=0, phase="Running"),
        pod("j-0", "j", node_name="n1", phase="Running"),
        pod("j-1", "j", node_name="n1", phase="Running"),
    )
    ssn = real_session(snap, load_scheduler_conf())

    def pick_first(tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [t for t in tasks if t.name == "j-0"]

    FakePlugin("gang", {ExtensionPoint.VICTIM_TASKS: pick_first}).on_session_open(ssn)
    ShuffleAction().execute(ssn)
    assert ssn.decisions == [Evict("default/j-0", "default/j-0", "shuffle")]


def test_queue_allocated_adds_up_through_parents_to_root() -> None:
    snap = snapshot(
        node("n1", cpu="8"),
        {"kind": "Queue", "metadata": {"name": "eng"}, "spec": {"weight": 1}},
        {"kind": "Queue", "metadata": {"name": "eng-a"}, "spec": {"weight": 1, "parent": "eng"}},
        podgroup("a", phase="Running", queue="eng-a"),
        podgroup("e", phase="Running", queue="eng"),
        pod("a-0", "a", cpu="2", node_name="n1", phase="Running"),
        pod("e-0", "e", cpu="1", node_name="n1", phase="Running"),
    )
    result = run_cycle(snap, load_scheduler_conf())
    allocated = {q.queue: q.allocated["cpu"] for q in result.queues}
    assert allocated == {"default": "0", "eng": "3", "eng-a": "2", "root": "3"}


@pytest.mark.parametrize(
    "stored", [None, {}, {"phase": ""}, {"phase": "Pending"}], ids=["none", "empty", "blank", "pending"]
)
def test_a_podgroup_without_pods_is_enqueued_in_its_first_session_whatever_its_stored_phase_says(
    stored: dict[str, str] | None,
) -> None:
    """A vcjob's pods are created once its PodGroup is Inqueue, so no gang check may keep a pending one out
    of enqueue. A PodGroup its creator stored without a status reads as Pending: it used to be dropped as
    invalid (NotEnoughPodsOfTask) until its first status was written, 3-4 s later for every job."""
    group = podgroup("j", min_member=10)
    if stored is None:
        del group["status"]
    else:
        group["status"] = stored
    result = run_cycle(snapshot(node("n1"), group), load_scheduler_conf())
    assert result.podgroups["default/j"].phase == "Inqueue"


def _unschedulable(result: object, key: str = "default/j") -> tuple[str, str]:
    update = result.podgroups[key]  # type: ignore[attr-defined]
    (condition,) = [c for c in update.conditions if c.type == "Unschedulable"]
    return condition.reason, condition.message


def test_a_gang_enqueued_before_its_pods_exist_says_its_pods_are_missing_as_later_sessions_do() -> None:
    """The session that enqueues a vcjob's PodGroup finds none of its pods (they are created once it is
    Inqueue). It says what the next sessions say while the pods are being created, so the PodGroup's
    condition does not change (and is not rewritten) between them: on kube that was a PATCH for a third
    of the gangs, replacing "10/0 tasks in gang unschedulable" a few seconds after it was written."""
    group = podgroup("j", min_member=10, phase="Pending")
    group["spec"]["minTaskMember"] = {"w": 10}
    enqueued = run_cycle(snapshot(node("n1", cpu="100"), group), load_scheduler_conf())
    assert enqueued.podgroups["default/j"].phase == "Inqueue"
    assert _unschedulable(enqueued) == ("NotEnoughPodsOfTask", "Not enough valid pods of each task for gang-scheduling")

    group["status"] = {"phase": "Inqueue"}
    some = []
    for i in range(3):
        created = pod(f"j-w-{i}", "j")
        created["metadata"]["annotations"]["volcano.sh/task-spec"] = "w"
        some.append(created)
    creating = run_cycle(snapshot(node("n1", cpu="100"), group, *some), load_scheduler_conf())
    assert _unschedulable(creating) == _unschedulable(enqueued)


def test_a_gang_left_pending_still_says_why_it_is_not_enqueued() -> None:
    group = podgroup("j", min_member=10, phase="Pending")
    group["spec"]["minTaskMember"] = {"w": 10}
    group["spec"]["minResources"] = {"cpu": "1000"}  # more than the cluster has: enqueue declines it
    result = run_cycle(snapshot(node("n1", cpu="4"), group), load_scheduler_conf())
    assert result.podgroups["default/j"].phase == "Pending"
    reason, message = _unschedulable(result)
    assert reason == "NotEnoughResources"
    assert "tasks in gang unschedulable" in message and "overused cpu" in message


def test_a_scheduled_gang_is_no_longer_unschedulable() -> None:
    """The conditions agree with the phase: once the gang is placed, the Unschedulable condition an
    earlier session wrote turns False beside Scheduled True."""
    group = podgroup("j", min_member=1)
    group["status"]["conditions"] = [
        {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": "1/1 tasks ..."}
    ]
    result = run_cycle(snapshot(node("n1"), group, pod("j-0", "j")), load_scheduler_conf())
    conditions = {c.type: c.status for c in result.podgroups["default/j"].conditions}
    assert conditions == {"Scheduled": "True", "Unschedulable": "False"}

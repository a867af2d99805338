"""Volcano's job state machine (semantics 2.3), row by row, through the pure `decide`."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import (
    job,
    phase_after,
    pod,
    podgroup,
    pods,
    run,
    task,
    view,
    with_phase,
    with_status,
)
from vc_job_controller.logic import Request
from vc_job_controller.logic.plan import Plan
from vc_job_controller.logic.podgroup import PARTITION_ID_KEY
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.vocabulary import Action, JobPhase

LIFECYCLE_PHASES = [JobPhase.PENDING, JobPhase.RUNNING]


def two_task_job(phase: str, **kw: object) -> Job:
    return job([task("ps", 1), task("worker", 2)], phase=phase, **kw)  # type: ignore[arg-type]


def mixed_pods(j: Job) -> dict[str, Pod]:
    """ps-0 Running, worker-0 Succeeded, worker-1 Failed."""
    return pods(pod(j, "ps", 0, "Running"), pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Failed"))


def act(j: Job, action: str, pod_map: dict[str, Pod] | None = None, **request: object) -> Plan:
    pg = podgroup(j, "Running")
    return run(view(j, mixed_pods(j) if pod_map is None else pod_map, pg), Request(action=action, **request))  # type: ignore[arg-type]


def deleted(plan: Plan) -> set[str]:
    return {d.name for d in plan.pods_to_delete}


# --- Pending and Running share the lifecycle actions -------------------------------------------------


@pytest.mark.parametrize("phase", LIFECYCLE_PHASES)
def test_restart_job_kills_every_pod_bumps_version_and_retry_and_deletes_podgroup(phase: str) -> None:
    j = two_task_job(phase, version=2, retry_count=0)
    plan = act(j, Action.RESTART_JOB)
    assert deleted(plan) == {"job-ps-0", "job-worker-0", "job-worker-1"}
    assert all(d.mark_out_of_sync for d in plan.pods_to_delete)
    assert plan.status is not None
    assert phase_after(plan, j) == JobPhase.RESTARTING
    assert (plan.status.retry_count, plan.status.version, plan.status.terminating) == (1, 3, 3)
    assert plan.podgroup_to_delete == f"job-{j.metadata.uid}"


@pytest.mark.parametrize("phase", LIFECYCLE_PHASES)
def test_restart_job_on_last_retry_keeps_finished_pods(phase: str) -> None:
    j = two_task_job(phase, retry_count=2, max_retry=3)
    plan = act(j, Action.RESTART_JOB)
    assert deleted(plan) == {"job-ps-0"}
    assert plan.status is not None and plan.status.retry_count == 3


@pytest.mark.parametrize("phase", LIFECYCLE_PHASES)
def test_restart_task_kills_only_that_task_and_keeps_podgroup_and_version(phase: str) -> None:
    j = two_task_job(phase, version=1)
    plan = act(j, Action.RESTART_TASK, task_name="worker")
    assert deleted(plan) == {"job-worker-0", "job-worker-1"}
    assert plan.status is not None
    assert phase_after(plan, j) == JobPhase.RESTARTING
    assert (plan.status.retry_count, plan.status.version) == (1, 1)
    assert plan.podgroup_to_delete is None


@pytest.mark.parametrize("phase", LIFECYCLE_PHASES)
def test_restart_pod_kills_only_that_pod(phase: str) -> None:
    j = two_task_job(phase)
    plan = act(j, Action.RESTART_POD, task_name="worker", pod_name="job-worker-1")
    assert deleted(plan) == {"job-worker-1"}
    assert phase_after(plan, j) == JobPhase.RESTARTING
    assert plan.status is not None and plan.status.retry_count == 1


def test_restart_partition_kills_the_pods_of_that_partition() -> None:
    j = two_task_job(JobPhase.RUNNING)
    labelled = {
        name: replace(p, metadata=replace(p.metadata, labels={PARTITION_ID_KEY: name[-1]}))
        for name, p in mixed_pods(j).items()
    }
    plan = act(j, Action.RESTART_PARTITION, labelled, task_name="worker", partition_id="1")
    assert deleted(plan) == {"job-worker-1"}
    assert phase_after(plan, j) == JobPhase.RESTARTING


def test_restart_partition_without_pods_changes_nothing() -> None:
    j = two_task_job(JobPhase.RUNNING)
    plan = act(j, Action.RESTART_PARTITION, task_name="worker", partition_id="7")
    assert plan.pods_to_delete == () and plan.status is None


@pytest.mark.parametrize("phase", LIFECYCLE_PHASES)
@pytest.mark.parametrize(
    ("action", "next_phase"),
    [
        (Action.ABORT_JOB, JobPhase.ABORTING),
        (Action.COMPLETE_JOB, JobPhase.COMPLETING),
        (Action.TERMINATE_JOB, JobPhase.TERMINATING),
    ],
)
def test_stopping_actions_kill_soft_and_move_on(phase: str, action: str, next_phase: str) -> None:
    j = two_task_job(phase, version=4)
    plan = act(j, action)
    assert deleted(plan) == {"job-ps-0"}  # Succeeded and Failed pods are kept
    assert plan.status is not None
    assert phase_after(plan, j) == next_phase
    assert plan.status.version == 5 and plan.status.retry_count == 0
    assert plan.status.state is not None and plan.status.state.reason == action
    assert plan.podgroup_to_delete == f"job-{j.metadata.uid}"


# --- Pending: anything else is SyncJob --------------------------------------------------------------


@pytest.mark.parametrize("action", [Action.SYNC_JOB, Action.ENQUEUE_JOB, Action.RESUME_JOB])
def test_pending_starts_running_once_min_available_pods_run_or_finished(action: str) -> None:
    j = two_task_job(JobPhase.PENDING)
    plan = act(j, action)
    assert phase_after(plan, j) == JobPhase.RUNNING
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "MinAvailableReached"


def test_pending_stays_pending_while_pods_are_pending() -> None:
    j = two_task_job(JobPhase.PENDING)
    pod_map = pods(pod(j, "ps", 0, "Pending"), pod(j, "worker", 0, "Running"), pod(j, "worker", 1, "Pending"))
    plan = act(j, Action.SYNC_JOB, pod_map)
    assert phase_after(plan, j) == JobPhase.PENDING
    assert plan.status is not None and (plan.status.pending, plan.status.running) == (2, 1)


# --- Running: rule R ----------------------------------------------------------------------------------


def sync(j: Job, pod_map: dict[str, Pod]) -> Plan:
    return act(j, Action.SYNC_JOB, pod_map)


def test_rule_r1_scaled_to_zero_keeps_phase() -> None:
    j = job([task("worker", 0)], phase=JobPhase.RUNNING, min_available=0)
    assert phase_after(sync(j, {}), j) == JobPhase.RUNNING


def test_rule_r2_min_success_reached_completes() -> None:
    j = job([task("worker", 3)], phase=JobPhase.RUNNING, min_success=2)
    pod_map = pods(pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Succeeded"), pod(j, "worker", 2))
    plan = sync(j, pod_map)
    assert phase_after(plan, j) == JobPhase.COMPLETED
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "MinSuccessReached"


def test_rule_r3a_task_below_its_min_available_fails_the_job() -> None:
    j = job([task("ps", 1, min_available=1), task("worker", 2, min_available=2)], phase=JobPhase.RUNNING)
    pod_map = pods(pod(j, "ps", 0, "Succeeded"), pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Failed"))
    plan = sync(j, pod_map)
    assert phase_after(plan, j) == JobPhase.FAILED
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "TaskMinAvailableNotMet"
    assert "task worker: 1 pods succeeded" in (plan.status.state.message or "")


def test_rule_r3a_is_skipped_when_job_min_available_is_below_the_tasks_sum() -> None:
    j = job(
        [task("ps", 1, min_available=1), task("worker", 2, min_available=2)], phase=JobPhase.RUNNING, min_available=2
    )
    pod_map = pods(pod(j, "ps", 0, "Succeeded"), pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Failed"))
    assert phase_after(sync(j, pod_map), j) == JobPhase.COMPLETED


def test_rule_r3b_min_success_not_reached_fails() -> None:
    j = job([task("worker", 3)], phase=JobPhase.RUNNING, min_available=1, min_success=3)
    pod_map = pods(pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Succeeded"), pod(j, "worker", 2, "Failed"))
    plan = sync(j, pod_map)
    assert phase_after(plan, j) == JobPhase.FAILED
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "MinSuccessNotMet"


def test_rule_r3c_enough_successes_complete() -> None:
    j = job([task("worker", 3)], phase=JobPhase.RUNNING, min_available=2)
    pod_map = pods(pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Succeeded"), pod(j, "worker", 2, "Failed"))
    plan = sync(j, pod_map)
    assert phase_after(plan, j) == JobPhase.COMPLETED
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "PodsSucceeded"


def test_rule_r3d_too_few_successes_fail() -> None:
    j = job([task("worker", 3)], phase=JobPhase.RUNNING, min_available=2)
    pod_map = pods(pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Failed"), pod(j, "worker", 2, "Failed"))
    plan = sync(j, pod_map)
    assert phase_after(plan, j) == JobPhase.FAILED
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "MinAvailableNotMet"


def test_rule_r4_too_many_pending_pods_fall_back_to_pending() -> None:
    j = job([task("worker", 3)], phase=JobPhase.RUNNING, min_available=2)
    pod_map = pods(pod(j, "worker", 0, "Pending"), pod(j, "worker", 1, "Pending"), pod(j, "worker", 2))
    assert phase_after(sync(j, pod_map), j) == JobPhase.PENDING


def test_rule_r5_otherwise_stays_running() -> None:
    j = job([task("worker", 3)], phase=JobPhase.RUNNING, min_available=2)
    pod_map = pods(pod(j, "worker", 0, "Pending"), pod(j, "worker", 1), pod(j, "worker", 2))
    plan = sync(j, pod_map)
    assert phase_after(plan, j) == JobPhase.RUNNING
    assert plan.status is not None and (plan.status.pending, plan.status.running) == (1, 2)


# --- Restarting: rule RS ----------------------------------------------------------------------------


def restarting_job(*, retry_count: int, terminating: int, max_retry: int = 3) -> Job:
    j = two_task_job(JobPhase.RESTARTING, retry_count=retry_count, max_retry=max_retry, version=1)
    return with_status(j, terminating=terminating)


def test_restarting_fails_once_retry_count_reaches_max_retry() -> None:
    j = restarting_job(retry_count=3, terminating=0)
    plan = run(view(j, {}, None), Request(action=Action.SYNC_JOB))
    assert phase_after(plan, j) == JobPhase.FAILED
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.reason == "MaxRetryExceeded"


def test_restarting_returns_to_pending_when_enough_pods_are_released() -> None:
    j = restarting_job(retry_count=1, terminating=0)
    plan = run(view(j, {}, None), Request(action=Action.SYNC_JOB))
    assert phase_after(plan, j) == JobPhase.PENDING
    assert plan.podgroup_to_create is not None  # re-initiated with a fresh PodGroup
    assert plan.pods_to_create == ()


def test_restarting_waits_while_old_pods_terminate() -> None:
    j = restarting_job(retry_count=1, terminating=2)
    plan = run(view(j, {}, None), Request(action=Action.SYNC_JOB))
    assert phase_after(plan, j) == JobPhase.RESTARTING


def test_restarting_restart_task_kills_the_target_then_applies_rs() -> None:
    j = restarting_job(retry_count=1, terminating=0)
    plan = act(j, Action.RESTART_TASK, task_name="worker")
    assert deleted(plan) == {"job-worker-0", "job-worker-1"}
    # 3 replicas - 2 terminating < minAvailable 3: still restarting, retryCount unchanged
    assert phase_after(plan, j) == JobPhase.RESTARTING
    assert plan.status is not None and plan.status.retry_count == 1


def test_restarting_other_actions_kill_everything() -> None:
    j = restarting_job(retry_count=1, terminating=0)
    plan = act(j, Action.ABORT_JOB)
    assert deleted(plan) == {"job-ps-0", "job-worker-0", "job-worker-1"}
    assert phase_after(plan, j) == JobPhase.RESTARTING


def test_restarting_other_actions_fail_past_max_retry() -> None:
    j = restarting_job(retry_count=3, terminating=0)
    assert phase_after(act(j, Action.RESTART_JOB), j) == JobPhase.FAILED


# --- Aborting, Aborted, Completing, Terminating, finished ----------------------------------------------


@pytest.mark.parametrize("phase", [JobPhase.ABORTING, JobPhase.ABORTED])
def test_resume_restarts_an_aborting_or_aborted_job(phase: str) -> None:
    j = two_task_job(phase, retry_count=1)
    plan = act(j, Action.RESUME_JOB)
    assert phase_after(plan, j) == JobPhase.RESTARTING
    assert plan.status is not None and plan.status.retry_count == 2
    assert deleted(plan) == {"job-ps-0"}


@pytest.mark.parametrize(
    ("phase", "final"),
    [
        (JobPhase.ABORTING, JobPhase.ABORTED),
        (JobPhase.COMPLETING, JobPhase.COMPLETED),
        (JobPhase.TERMINATING, JobPhase.TERMINATED),
    ],
)
def test_stopping_phases_wait_for_alive_pods(phase: str, final: str) -> None:
    j = two_task_job(phase)
    plan = act(j, Action.SYNC_JOB)
    assert deleted(plan) == {"job-ps-0"}
    assert phase_after(plan, j) == phase  # ps-0 is now terminating: still alive
    finished = pods(pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Failed"))
    plan = act(j, Action.SYNC_JOB, finished)
    assert phase_after(plan, j) == final
    assert plan.pods_to_delete == ()


@pytest.mark.parametrize("action", [Action.SYNC_JOB, Action.RESTART_JOB, Action.ABORT_JOB])
def test_aborted_ignores_everything_but_resume(action: str) -> None:
    j = two_task_job(JobPhase.ABORTED)
    plan = act(j, action, pods(pod(j, "worker", 0, "Succeeded")))
    assert phase_after(plan, j) == JobPhase.ABORTED


@pytest.mark.parametrize("phase", [JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED])
@pytest.mark.parametrize("action", [Action.SYNC_JOB, Action.RESTART_JOB, Action.RESUME_JOB])
def test_finished_phases_are_terminal_and_release_live_pods(phase: str, action: str) -> None:
    j = two_task_job(phase)
    plan = act(j, action)
    assert phase_after(plan, j) == phase
    assert deleted(plan) == {"job-ps-0"}


def test_finished_job_with_nothing_to_kill_plans_nothing() -> None:
    j = two_task_job(JobPhase.COMPLETED)
    finished = pods(pod(j, "ps", 0, "Succeeded"), pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Succeeded"))
    first = act(j, Action.SYNC_JOB, finished)
    assert first.status is not None  # counts recorded once
    settled = replace(j, status=first.status)
    again = run(view(settled, finished, None), Request(action=Action.SYNC_JOB))
    assert again.status is None and again.pods_to_delete == () and again.podgroup_to_delete is None


@pytest.mark.parametrize("phase", ["", "Bogus"])
def test_empty_or_unknown_phase_behaves_as_pending(phase: str) -> None:
    j = two_task_job(JobPhase.PENDING)
    j = with_phase(j, phase)
    plan = act(j, Action.ABORT_JOB)
    assert phase_after(plan, j) == JobPhase.ABORTING


def test_deleting_job_is_left_alone() -> None:
    j = two_task_job(JobPhase.RUNNING)
    j = replace(j, metadata=replace(j.metadata, deletion_timestamp="2026-01-02T03:04:00Z"))
    plan = act(j, Action.RESTART_JOB)
    assert plan.status is None and plan.pods_to_delete == () and plan.pods_to_create == ()


def test_phase_change_appends_a_condition_with_reason_and_message() -> None:
    j = two_task_job(JobPhase.RUNNING)
    plan = act(j, Action.RESTART_JOB, event="PodEvicted", pod_name="job-ps-0")
    assert plan.status is not None and plan.status.conditions is not None
    last = plan.status.conditions[-1]
    assert last.status == JobPhase.RESTARTING and last.reason == Action.RESTART_JOB
    assert last.message == "RestartJob on PodEvicted of pod job-ps-0 (command)"
    assert plan.status.state is not None and plan.status.state.last_transition_time == last.last_transition_time


def test_reentering_a_phase_replaces_its_old_condition() -> None:
    from vc_proto.batch import JobCondition

    j = two_task_job(JobPhase.RUNNING)
    old = [
        JobCondition(status="Restarting", last_transition_time="x"),
        JobCondition(status="Running", last_transition_time="y"),
    ]
    j = with_status(j, conditions=old)
    plan = act(j, Action.RESTART_JOB)
    assert plan.status is not None and plan.status.conditions is not None
    assert [c.status for c in plan.status.conditions] == ["Running", "Restarting"]


def test_kill_records_running_duration() -> None:
    j = two_task_job(JobPhase.RUNNING)
    plan = act(j, Action.ABORT_JOB)
    assert plan.status is not None and plan.status.running_duration == "4m5s"

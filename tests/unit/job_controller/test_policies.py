"""Policy resolution (Volcano applyPolicies, semantics 2.2) and delayed actions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.unit.job_controller.jc_builders import UID, job, pod, podgroup, pods, run, spec_of, task, view
from vc_job_controller.logic import DelayedAction, Request, request_for_fired
from vc_job_controller.logic.policies import (
    apply_policies,
    delays_cancelled_by,
    delays_superseded_by,
    invalid_policy,
)
from vc_proto.batch import Job, LifecyclePolicy
from vc_proto.vocabulary import Action, Event, JobPhase


def policy(action: str, *, event: str | None = None, events: list[str] | None = None, **kw: object) -> LifecyclePolicy:
    return LifecyclePolicy(action=action, event=event, events=events, **kw)  # type: ignore[arg-type]


def policy_job(
    job_policies: list[LifecyclePolicy] | None = None, worker_policies: list[LifecyclePolicy] | None = None
) -> Job:
    return job(
        [task("ps", 1), task("worker", 2, policies=worker_policies)],
        phase=JobPhase.RUNNING,
        policies=job_policies,
        version=1,
    )


def resolve(j: Job, **request: object) -> tuple[str, timedelta]:
    fields: dict[str, object] = {"job_version": 1, **request}
    resolution = apply_policies(j, Request(**fields))  # type: ignore[arg-type]
    return resolution.action, resolution.delay


EVICT_RESTARTS = [policy(Action.RESTART_JOB, event=Event.POD_EVICTED)]


def test_no_policy_means_sync_job() -> None:
    assert resolve(policy_job(), event=Event.POD_EVICTED, task_name="worker") == (Action.SYNC_JOB, timedelta(0))


def test_job_policy_matches_its_event() -> None:
    assert resolve(policy_job(EVICT_RESTARTS), event=Event.POD_EVICTED)[0] == Action.RESTART_JOB


def test_job_policy_ignores_other_events() -> None:
    assert resolve(policy_job(EVICT_RESTARTS), event=Event.POD_FAILED)[0] == Action.SYNC_JOB


def test_events_list_and_single_event_both_match() -> None:
    j = policy_job([policy(Action.ABORT_JOB, events=[Event.POD_FAILED], event=Event.TASK_FAILED)])
    assert resolve(j, event=Event.POD_FAILED)[0] == Action.ABORT_JOB
    assert resolve(j, event=Event.TASK_FAILED)[0] == Action.ABORT_JOB


def test_any_event_matches_everything_external() -> None:
    j = policy_job([policy(Action.TERMINATE_JOB, event=Event.ANY)])
    for event in (Event.POD_FAILED, Event.POD_EVICTED, Event.JOB_UNKNOWN, Event.TASK_COMPLETED, Event.TASK_FAILED):
        assert resolve(j, event=event)[0] == Action.TERMINATE_JOB


@pytest.mark.parametrize("event", [Event.OUT_OF_SYNC, Event.COMMAND_ISSUED, Event.POD_RUNNING])
def test_internal_events_never_trigger_policies(event: str) -> None:
    j = policy_job([policy(Action.TERMINATE_JOB, event=Event.ANY)])
    assert resolve(j, event=event)[0] == Action.SYNC_JOB


def test_task_policy_overrides_job_policy() -> None:
    j = policy_job(EVICT_RESTARTS, [policy(Action.RESTART_TASK, event=Event.POD_EVICTED)])
    assert resolve(j, event=Event.POD_EVICTED, task_name="worker")[0] == Action.RESTART_TASK
    assert resolve(j, event=Event.POD_EVICTED, task_name="ps")[0] == Action.RESTART_JOB


def test_task_policies_apply_only_to_their_task() -> None:
    j = policy_job(None, [policy(Action.COMPLETE_JOB, event=Event.TASK_COMPLETED)])
    assert resolve(j, event=Event.TASK_COMPLETED, task_name="ps")[0] == Action.SYNC_JOB
    assert resolve(j, event=Event.TASK_COMPLETED, task_name="worker")[0] == Action.COMPLETE_JOB


def test_first_matching_policy_wins() -> None:
    j = policy_job([policy(Action.ABORT_JOB, event=Event.POD_FAILED), policy(Action.RESTART_JOB, event=Event.ANY)])
    assert resolve(j, event=Event.POD_FAILED)[0] == Action.ABORT_JOB
    assert resolve(j, event=Event.POD_EVICTED)[0] == Action.RESTART_JOB


@pytest.mark.parametrize("level", ["job", "task"])
def test_pod_pending_matches_only_a_policy_with_timeout(level: str) -> None:
    untimed = [policy(Action.RESTART_JOB, event=Event.POD_PENDING)]
    timed = [policy(Action.RESTART_JOB, event=Event.POD_PENDING, timeout="10m")]
    any_event = [policy(Action.ABORT_JOB, event=Event.ANY)]

    def make(policies: list[LifecyclePolicy]) -> Job:
        return policy_job(policies) if level == "job" else policy_job(None, policies)

    assert resolve(make(untimed), event=Event.POD_PENDING, task_name="worker")[0] == Action.SYNC_JOB
    assert resolve(make(any_event), event=Event.POD_PENDING, task_name="worker")[0] == Action.SYNC_JOB
    assert resolve(make(timed), event=Event.POD_PENDING, task_name="worker") == (
        Action.RESTART_JOB,
        timedelta(minutes=10),
    )


def test_exit_code_policy_matches_the_exit_code() -> None:
    j = policy_job([policy(Action.ABORT_JOB, exit_code=3)], [policy(Action.RESTART_TASK, exit_code=137)])
    assert resolve(j, event=Event.POD_FAILED, exit_code=3, task_name="worker")[0] == Action.ABORT_JOB
    assert resolve(j, event=Event.POD_FAILED, exit_code=137, task_name="worker")[0] == Action.RESTART_TASK
    assert resolve(j, event=Event.POD_FAILED, exit_code=1, task_name="worker")[0] == Action.SYNC_JOB


def test_policy_timeout_becomes_the_delay() -> None:
    j = policy_job([policy(Action.RESTART_JOB, event=Event.POD_FAILED, timeout="1m30s")])
    assert resolve(j, event=Event.POD_FAILED) == (Action.RESTART_JOB, timedelta(seconds=90))


def test_command_action_is_used_directly() -> None:
    j = policy_job([policy(Action.TERMINATE_JOB, event=Event.ANY)])
    assert resolve(j, event=Event.COMMAND_ISSUED, action=Action.ABORT_JOB)[0] == Action.ABORT_JOB


def test_request_for_another_job_incarnation_only_syncs() -> None:
    j = policy_job(EVICT_RESTARTS)
    assert resolve(j, event=Event.POD_EVICTED, job_uid="other-uid")[0] == Action.SYNC_JOB
    assert resolve(j, event=Event.POD_EVICTED, job_uid=UID)[0] == Action.RESTART_JOB


def test_events_of_pods_from_an_older_version_only_sync() -> None:
    j = policy_job(EVICT_RESTARTS)
    assert resolve(j, event=Event.POD_EVICTED, job_version=0)[0] == Action.SYNC_JOB
    assert resolve(j, event=Event.POD_EVICTED, job_version=1)[0] == Action.RESTART_JOB


def test_invalid_timeout_is_reported() -> None:
    j = policy_job(None, [policy(Action.RESTART_JOB, event=Event.POD_FAILED, timeout="ten minutes")])
    assert (
        invalid_policy(spec_of(j))
        == "task worker policy 0: timeout: invalid duration 'ten minutes' (expected e.g. '30s', '10m', '1h30m')"
    )
    assert invalid_policy(spec_of(policy_job(EVICT_RESTARTS))) is None


# --- delayed actions ------------------------------------------------------------------------------------


def delayed(key: str, action: str, event: str, *, task: str = "worker", uid: str = "") -> DelayedAction:
    return DelayedAction(
        key=key, action=action, event=event, task_name=task, pod_name=key, pod_uid=uid, delay=timedelta(minutes=5)
    )


PENDING_DELAY = delayed("job-worker-0", Action.RESTART_JOB, Event.POD_PENDING, uid="uid-job-worker-0")
FAILED_DELAY = delayed("job-worker-1", Action.RESTART_POD, Event.POD_FAILED)


def test_pod_running_cancels_a_delayed_failure_action_of_that_pod() -> None:
    table = {FAILED_DELAY.key: FAILED_DELAY}
    assert delays_cancelled_by(Request(event=Event.POD_RUNNING, pod_name="job-worker-1"), table) == ["job-worker-1"]
    assert delays_cancelled_by(Request(event=Event.POD_FAILED, pod_name="job-worker-1"), table) == []


def test_pod_moving_on_cancels_its_pending_timeout_only_for_the_same_pod_uid() -> None:
    table = {PENDING_DELAY.key: PENDING_DELAY}
    same = Request(event=Event.POD_RUNNING, pod_name="job-worker-0", pod_uid="uid-job-worker-0")
    other = Request(event=Event.POD_FAILED, pod_name="job-worker-0", pod_uid="recreated")
    still_pending = Request(event=Event.POD_PENDING, pod_name="job-worker-0", pod_uid="uid-job-worker-0")
    assert delays_cancelled_by(same, table) == ["job-worker-0"]
    assert delays_cancelled_by(other, table) == []
    assert delays_cancelled_by(still_pending, table) == []


def test_non_pod_events_cancel_nothing() -> None:
    table = {PENDING_DELAY.key: PENDING_DELAY}
    assert delays_cancelled_by(Request(event=Event.OUT_OF_SYNC, pod_name="job-worker-0"), table) == []


def test_an_executed_action_supersedes_delays_of_the_same_scope() -> None:
    table = {
        "a": delayed("a", Action.RESTART_JOB, Event.POD_FAILED),
        "b": delayed("b", Action.ABORT_JOB, Event.POD_FAILED),
        "c": delayed("c", Action.RESTART_TASK, Event.POD_FAILED, task="worker"),
        "d": delayed("d", Action.RESTART_TASK, Event.POD_FAILED, task="ps"),
        "e": delayed("e", Action.RESTART_POD, Event.POD_FAILED),
    }
    assert delays_superseded_by(Action.TERMINATE_JOB, Request(), table) == ["a", "b"]
    assert delays_superseded_by(Action.RESTART_TASK, Request(task_name="worker"), table) == ["c"]
    assert delays_superseded_by(Action.RESTART_POD, Request(pod_name="e"), table) == ["e"]
    assert delays_superseded_by(Action.RESTART_POD, Request(pod_name="zzz"), table) == []


def timed_job() -> Job:
    return policy_job([policy(Action.RESTART_JOB, event=Event.POD_FAILED, timeout="5m")])


def test_decide_schedules_a_delayed_action_instead_of_acting() -> None:
    j = timed_job()
    request = Request(event=Event.POD_FAILED, pod_name="job-worker-0", pod_uid="u0", task_name="worker", job_version=1)
    plan = run(view(j, pods(pod(j, "worker", 0, "Failed", version=1))), request)
    assert plan.status is None and plan.pods_to_delete == ()
    assert len(plan.delays_to_schedule) == 1
    scheduled = plan.delays_to_schedule[0]
    assert (scheduled.key, scheduled.action, scheduled.delay) == (
        "job-worker-0",
        Action.RESTART_JOB,
        timedelta(minutes=5),
    )
    assert scheduled.due_at == "2026-01-02T03:09:05Z"
    assert [e.reason for e in plan.events] == ["ActionDelayed"]
    assert plan.events[0].message is not None and "after 5m0s" in plan.events[0].message


def test_decide_does_not_schedule_the_same_delay_twice() -> None:
    j = timed_job()
    request = Request(event=Event.POD_FAILED, pod_name="job-worker-0", task_name="worker", job_version=1)
    waiting = delayed("job-worker-0", Action.RESTART_JOB, Event.POD_FAILED)
    plan = run(view(j, {}, delayed={waiting.key: waiting}), request)
    assert plan.delays_to_schedule == () and plan.events == ()


def test_a_fired_delay_runs_its_action_and_is_dropped() -> None:
    j = timed_job()
    waiting = delayed("job-worker-0", Action.RESTART_JOB, Event.POD_FAILED)
    other = delayed("job-worker-1", Action.ABORT_JOB, Event.POD_FAILED)
    v = view(j, pods(pod(j, "worker", 0, "Failed", version=1)), delayed={waiting.key: waiting, other.key: other})
    plan = run(v, request_for_fired(waiting))
    assert plan.action == Action.RESTART_JOB
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.phase == JobPhase.RESTARTING
    # the fired one, and every other job-level delay it supersedes
    assert set(plan.delays_to_cancel) == {"job-worker-0", "job-worker-1"}


def test_sync_job_supersedes_nothing() -> None:
    j = timed_job()
    waiting = delayed("job-worker-0", Action.RESTART_JOB, Event.POD_FAILED)
    plan = run(view(j, {}, podgroup(j), delayed={waiting.key: waiting}), Request(event=Event.OUT_OF_SYNC))
    assert plan.delays_to_cancel == ()


def test_decide_cancels_a_pending_timeout_when_the_pod_starts() -> None:
    j = policy_job([policy(Action.RESTART_JOB, event=Event.POD_PENDING, timeout="10m")])
    request = Request(
        event=Event.POD_RUNNING, pod_name="job-worker-0", pod_uid="uid-job-worker-0", task_name="worker", job_version=1
    )
    plan = run(
        view(j, pods(pod(j, "worker", 0, "Running", version=1)), delayed={PENDING_DELAY.key: PENDING_DELAY}), request
    )
    assert plan.delays_to_cancel == ("job-worker-0",)
    assert plan.action == Action.SYNC_JOB

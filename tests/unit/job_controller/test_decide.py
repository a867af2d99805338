"""`decide` end to end: broken configurations fail the job, seeds' policies, and the history it reports."""

from __future__ import annotations

from datetime import timedelta

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import (
    job,
    load_seed,
    phase_after,
    pod,
    podgroup,
    pods,
    run,
    task,
    view,
    with_status,
)
from vc_job_controller.logic import DelayedAction, Request
from vc_job_controller.logic.plan import Plan
from vc_proto.batch import Job, JobState, LifecyclePolicy
from vc_proto.codec import decode, encode
from vc_proto.vocabulary import Action, Event, JobPhase


def reason_and_message(plan: Plan) -> tuple[str | None, str | None]:
    assert plan.status is not None and plan.status.state is not None
    return plan.status.state.reason, plan.status.state.message


def test_unknown_plugin_fails_the_job_with_a_condition_saying_why() -> None:
    j = job([task("w", 2)], plugins={"svc": [], "horovod": []})
    plan = run(view(j, {}, None))
    assert phase_after(plan, j) == JobPhase.FAILED
    reason, message = reason_and_message(plan)
    assert reason == "PluginError"
    known = "env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow"
    assert message == f"plugin horovod: failed to get plugin horovod (known: {known})"
    assert plan.status is not None and plan.status.conditions is not None
    assert plan.status.conditions[-1].reason == "PluginError"
    assert plan.pods_to_create == () and plan.podgroup_to_create is None


def test_nonsense_plugin_arguments_fail_a_running_job_and_release_its_pods() -> None:
    j = job([task("w", 2)], phase=JobPhase.RUNNING, plugins={"mpi": ["--port=twenty-two"]})
    plan = run(view(j, pods(pod(j, "w", 0), pod(j, "w", 1, "Succeeded")), podgroup(j, "Running")))
    assert phase_after(plan, j) == JobPhase.FAILED
    assert reason_and_message(plan) == (
        "PluginError",
        'plugin mpi: invalid value "twenty-two" for flag -port: not an integer',
    )
    assert [d.name for d in plan.pods_to_delete] == ["job-w-0"]


def test_a_plugin_failing_inside_a_hook_fails_the_job_too() -> None:
    j = job([task("w", 1)], plugins={"svc": ["--service-type=NodePort"]})
    plan = run(view(j, {}, None))
    assert phase_after(plan, j) == JobPhase.FAILED
    assert plan.objects_to_write == ()
    assert "needs -port or -ports" in (reason_and_message(plan)[1] or "")


def test_unparsable_policy_timeout_fails_the_job() -> None:
    policies = [LifecyclePolicy(event=Event.POD_PENDING, action=Action.RESTART_JOB, timeout="soon")]
    j = job([task("w", 1)], policies=policies)
    plan = run(view(j, {}, None))
    assert phase_after(plan, j) == JobPhase.FAILED
    assert reason_and_message(plan)[0] == "InvalidPolicy"


def test_a_failed_job_with_broken_plugins_stays_quiet() -> None:
    j = job([task("w", 1)], phase=JobPhase.FAILED, plugins={"nope": []})
    first = run(view(j, {}, None))
    assert first.pods_to_delete == () and phase_after(first, j) == JobPhase.FAILED
    settled = replace(j, status=first.status or j.status)
    again = run(view(settled, {}, None))
    assert again.status is None and again.events == ()


# --- the seeds' policies -------------------------------------------------------------------------------


def running(seed: Job, version: int = 0) -> Job:
    state = JobState(phase=JobPhase.RUNNING, last_transition_time="2026-01-02T03:00:00Z")
    return with_status(seed, state=state, version=version, min_available=(seed.spec.min_available if seed.spec else 0))


def test_tensorflow_seed_worker_task_completed_completes_the_job() -> None:
    j = running(load_seed("tensorflow-benchmark.yaml"))
    live = pods(pod(j, "ps", 0), pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Succeeded"))
    request = Request(event=Event.TASK_COMPLETED, task_name="worker", pod_name="tensorflow-benchmark-worker-1")
    plan = run(view(j, live, podgroup(j, "Running")), request)
    assert plan.action == Action.COMPLETE_JOB
    assert phase_after(plan, j) == JobPhase.COMPLETING
    assert [d.name for d in plan.pods_to_delete] == ["tensorflow-benchmark-ps-0"]
    # once ps is gone the job is Completed
    completing = replace(j, status=plan.status)
    done = run(view(completing, pods(pod(j, "worker", 0, "Succeeded"), pod(j, "worker", 1, "Succeeded")), None))
    assert phase_after(done, completing) == JobPhase.COMPLETED


def test_mpi_seed_pod_evicted_restarts_the_job() -> None:
    j = running(load_seed("lm-mpi-job.yaml"), version=1)
    live = pods(*(pod(j, "mpiworker", i, version=1) for i in range(3)), pod(j, "mpimaster", 0, version=1))
    request = Request(event=Event.POD_EVICTED, task_name="mpiworker", pod_name="lm-mpi-job-mpiworker-2", job_version=1)
    plan = run(view(j, live, podgroup(j, "Running")), request)
    assert plan.action == Action.RESTART_JOB
    assert phase_after(plan, j) == JobPhase.RESTARTING
    assert plan.status is not None and (plan.status.version, plan.status.retry_count) == (2, 1)
    assert len(plan.pods_to_delete) == 4


def test_mpi_seed_eviction_of_an_old_version_pod_only_syncs() -> None:
    j = running(load_seed("lm-mpi-job.yaml"), version=2)
    request = Request(event=Event.POD_EVICTED, task_name="mpiworker", pod_name="lm-mpi-job-mpiworker-2", job_version=1)
    plan = run(view(j, {}, podgroup(j, "Running")), request)
    assert plan.action == Action.SYNC_JOB


# --- history ------------------------------------------------------------------------------------------


def test_phase_change_and_executed_action_are_reported() -> None:
    j = job([task("w", 2)], phase=JobPhase.RUNNING)
    plan = run(
        view(j, pods(pod(j, "w", 0), pod(j, "w", 1)), podgroup(j, "Running")),
        Request(action=Action.ABORT_JOB, event=Event.COMMAND_ISSUED),
    )
    reasons = [(e.kind, e.reason) for e in plan.events]
    assert reasons[:2] == [("Job", "CommandIssued"), ("Job", "ExecuteAction")]
    assert ("Pod", "PodDeleted") in reasons
    phase = next(e for e in plan.events if e.kind == "Job" and e.reason == "PhaseChanged")
    assert (phase.previous_phase, phase.phase) == ("Running", "Aborting")
    assert phase.message == "AbortJob: AbortJob on CommandIssued (command)"
    assert all(e.occurred_at == "2026-01-02T03:04:05Z" for e in plan.events)


def test_pod_exit_is_reported_with_exit_code_node_and_times() -> None:
    j = job([task("w", 2)], phase=JobPhase.RUNNING)
    failed = pod(j, "w", 1, "Failed", exit_code=137, node="node-7")
    request = Request(
        event=Event.POD_FAILED, task_name="w", pod_name="job-w-1", exit_code=137, previous_phase="Running"
    )
    plan = run(view(j, pods(pod(j, "w", 0), failed), podgroup(j, "Running")), request)
    exit_event = next(e for e in plan.events if e.kind == "Pod")
    assert (exit_event.reason, exit_event.previous_phase, exit_event.phase) == ("PodExited", "Running", "Failed")
    assert (exit_event.exit_code, exit_event.node, exit_event.task) == (137, "node-7", "w")
    assert exit_event.started_at == "2026-01-02T03:01:00Z"


def test_pod_start_is_reported_but_a_new_pending_pod_is_not_reported_twice() -> None:
    j = job([task("w", 1)], phase=JobPhase.PENDING)
    started = Request(event=Event.POD_RUNNING, pod_name="job-w-0", task_name="w", previous_phase="Pending")
    plan = run(view(j, pods(pod(j, "w", 0)), podgroup(j, "Running")), started)
    assert [(e.kind, e.reason) for e in plan.events if e.kind == "Pod"] == [("Pod", "PodStarted")]
    added = Request(event=Event.POD_PENDING, pod_name="job-w-0", task_name="w", previous_phase="")
    plan = run(view(j, pods(pod(j, "w", 0, "Pending")), podgroup(j, "Running")), added)
    assert [e for e in plan.events if e.kind == "Pod"] == []


def test_eviction_by_someone_else_is_reported_but_our_own_deletion_is_not() -> None:
    j = job([task("w", 1)], phase=JobPhase.RUNNING)
    gone = pod(j, "w", 0)
    evicted = Request(event=Event.POD_EVICTED, pod_name="job-w-0", task_name="w", previous_phase="Running", pod=gone)
    plan = run(view(j, {}, podgroup(j, "Running")), evicted)
    event = next(e for e in plan.events if e.kind == "Pod" and e.name == "job-w-0" and e.reason != "PodCreated")
    assert (event.reason, event.phase) == ("PodEvicted", "Deleted")
    ours = Request(
        event=Event.OUT_OF_SYNC, pod_name="job-w-0", previous_phase="Running", pod=pod(j, "w", 0, out_of_sync=True)
    )
    plan = run(view(j, {}, podgroup(j, "Pending")), ours)
    assert [e for e in plan.events if e.kind == "Pod"] == []


def test_task_transitions_are_reported_with_pod_counts() -> None:
    j = with_status(job([task("w", 2)], phase=JobPhase.RUNNING), task_status_count=None)
    plan = run(view(j, pods(pod(j, "w", 0, "Succeeded"), pod(j, "w", 1, "Succeeded")), podgroup(j, "Running")))
    task_event = next(e for e in plan.events if e.kind == "Task")
    assert (task_event.name, task_event.previous_phase, task_event.phase) == ("w", "Inactive", "Completed")
    assert task_event.message == "2 Succeeded"


def test_a_template_quantity_that_is_not_one_fails_the_job() -> None:
    j = job([task("w", 1, cpu="lots")])
    plan = run(view(j, {}, None))
    assert phase_after(plan, j) == JobPhase.FAILED
    reason, message = reason_and_message(plan)
    assert reason == "InvalidJob" and "'lots' is not a quantity" in (message or "")


def test_plans_round_trip_through_json() -> None:
    j = load_seed("lm-mpi-job.yaml")
    plan = run(view(j, {}, None))
    assert decode(encode(plan), Plan) == plan
    waiting = DelayedAction(key="p", action="RestartJob", delay=timedelta(seconds=90))
    assert decode(encode(waiting), DelayedAction) == waiting

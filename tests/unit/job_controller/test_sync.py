"""SyncJob: initiation, PodGroup gating, scale up/down, out-of-sync pods, dependsOn, counting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import (
    NOW,
    job,
    phase_after,
    pod,
    podgroup,
    pods,
    run,
    task,
    view,
    with_status,
)
from vc_core.times import rfc3339
from vc_job_controller.logic import Request
from vc_proto.batch import DependsOn, Job, JobStatus
from vc_proto.vocabulary import Event, JobPhase


def new_job(**kw: object) -> Job:
    return job([task("ps", 1), task("worker", 2)], **kw)  # type: ignore[arg-type]


def created(plan: object) -> list[str]:
    return [p.metadata.name or "" for p in plan.pods_to_create]  # type: ignore[attr-defined]


def test_new_job_is_initialised_pending_with_a_podgroup_and_no_pods() -> None:
    j = new_job()
    plan = run(view(j, {}, None), Request(event=Event.OUT_OF_SYNC))
    assert plan.status is not None and plan.status.state is not None
    assert plan.status.state.phase == JobPhase.PENDING
    assert plan.status.state.reason == "JobInitialized"
    assert plan.status.min_available == 3
    assert plan.status.conditions is not None and [c.status for c in plan.status.conditions] == ["Pending"]
    assert plan.podgroup_to_create is not None
    assert plan.podgroup_to_create.metadata.name == f"job-{j.metadata.uid}"
    assert plan.pods_to_create == ()
    assert [e.reason for e in plan.events] == ["PhaseChanged"]


@pytest.mark.parametrize("pg_phase", [None, "", "Pending"])
def test_no_pods_until_the_podgroup_leaves_pending(pg_phase: str | None) -> None:
    j = new_job(phase=JobPhase.PENDING)
    plan = run(view(j, {}, podgroup(j, pg_phase)))
    assert plan.pods_to_create == ()


@pytest.mark.parametrize("pg_phase", ["Inqueue", "Running", "Unknown", "Completed"])
def test_pods_are_created_once_the_podgroup_is_admitted(pg_phase: str) -> None:
    j = new_job(phase=JobPhase.PENDING)
    plan = run(view(j, {}, podgroup(j, pg_phase)))
    assert created(plan) == ["job-ps-0", "job-worker-0", "job-worker-1"]
    assert plan.status is not None and plan.status.pending == 3
    assert plan.status.task_status_count is not None
    assert {t: s.phase for t, s in plan.status.task_status_count.items()} == {
        "ps": {"Pending": 1},
        "worker": {"Pending": 2},
    }
    assert [e.reason for e in plan.events].count("PodCreated") == 3


def test_existing_pods_are_not_created_again() -> None:
    j = new_job(phase=JobPhase.PENDING)
    plan = run(view(j, pods(pod(j, "worker", 0, "Pending")), podgroup(j)))
    assert created(plan) == ["job-ps-0", "job-worker-1"]


def test_sync_is_idempotent_once_its_status_is_written() -> None:
    j = new_job(phase=JobPhase.RUNNING)
    pod_map = pods(pod(j, "ps", 0), pod(j, "worker", 0), pod(j, "worker", 1))
    first = run(view(j, pod_map, podgroup(j, "Running")))
    assert first.status is not None
    again = run(view(replace(j, status=first.status), pod_map, podgroup(j, "Running")))
    assert again.status is None and again.pods_to_create == () and again.pods_to_delete == ()


def test_scale_up_creates_the_new_indexes() -> None:
    j = job([task("worker", 4)], phase=JobPhase.RUNNING, min_available=2)
    plan = run(view(j, pods(pod(j, "worker", 0), pod(j, "worker", 1)), podgroup(j, "Running")))
    assert created(plan) == ["job-worker-2", "job-worker-3"]


def test_scale_down_deletes_surplus_pods_and_counts_them_terminating() -> None:
    j = job([task("worker", 1)], phase=JobPhase.RUNNING, min_available=1)
    plan = run(view(j, pods(pod(j, "worker", 0), pod(j, "worker", 1), pod(j, "worker", 2)), podgroup(j, "Running")))
    assert [(d.name, d.reason, d.mark_out_of_sync) for d in plan.pods_to_delete] == [
        ("job-worker-1", "ScaleDown", True),
        ("job-worker-2", "ScaleDown", True),
    ]
    assert plan.status is not None and (plan.status.running, plan.status.terminating) == (1, 2)


def test_out_of_sync_pods_are_deleted_and_still_counted() -> None:
    j = job([task("worker", 2)], phase=JobPhase.RUNNING, min_available=2)
    pod_map = pods(pod(j, "worker", 0), pod(j, "worker", 1, out_of_sync=True))
    plan = run(view(j, pod_map, podgroup(j, "Running")))
    assert [(d.name, d.mark_out_of_sync) for d in plan.pods_to_delete] == [("job-worker-1", False)]
    assert plan.status is not None and (plan.status.running, plan.status.terminating) == (2, 1)


def test_terminating_pods_count_as_terminating_and_are_not_replaced() -> None:
    j = job([task("worker", 2)], phase=JobPhase.RUNNING, min_available=1)
    pod_map = pods(pod(j, "worker", 0), pod(j, "worker", 1, terminating=True))
    plan = run(view(j, pod_map, podgroup(j, "Running")))
    assert plan.pods_to_create == () and plan.pods_to_delete == ()
    assert plan.status is not None and (plan.status.running, plan.status.terminating) == (1, 1)


def test_unknown_pod_phase_is_counted_unknown() -> None:
    j = job([task("worker", 2)], phase=JobPhase.RUNNING, min_available=1)
    plan = run(view(j, pods(pod(j, "worker", 0), pod(j, "worker", 1, "Unknown")), podgroup(j, "Running")))
    assert plan.status is not None and plan.status.unknown == 1
    assert plan.status.task_status_count is not None
    assert plan.status.task_status_count["worker"].phase == {"Running": 1, "Unknown": 1}


def test_podgroup_spec_drift_is_updated() -> None:
    j = new_job(phase=JobPhase.RUNNING)
    pg = replace(podgroup(j, "Running"), spec=None)
    plan = run(view(j, {}, pg))
    assert plan.podgroup_to_update is not None and plan.podgroup_to_update.spec is not None
    assert plan.podgroup_to_update.spec.min_member == 3


def test_podgroup_in_sync_is_not_updated() -> None:
    j = new_job(phase=JobPhase.RUNNING)
    from vc_job_controller.logic.podgroup import build_podgroup

    pg = replace(build_podgroup(j, {}), status=podgroup(j, "Running").status)
    plan = run(view(j, {}, pg))
    assert plan.podgroup_to_update is None and plan.podgroup_to_create is None


# --- dependsOn ------------------------------------------------------------------------------------------


def dag_job(iteration: str | None = None, deps: list[str] | None = None) -> Job:
    return job(
        [
            task("a", 1, min_available=1),
            task("b", 2, min_available=1),
            task("c", 1, depends_on=DependsOn(name=deps or ["a"], iteration=iteration)),
        ],
        phase=JobPhase.PENDING,
        min_available=1,
    )


def test_dependent_task_waits_for_its_dependency() -> None:
    j = dag_job()
    plan = run(view(j, {}, podgroup(j)))
    assert created(plan) == ["job-a-0", "job-b-0", "job-b-1"]


def test_dependency_running_but_not_ready_still_blocks() -> None:
    j = dag_job()
    plan = run(view(j, pods(pod(j, "a", 0, "Running", ready=False)), podgroup(j)))
    assert "job-c-0" not in created(plan)


@pytest.mark.parametrize("phase", ["Running", "Succeeded"])
def test_dependency_ready_releases_the_task(phase: str) -> None:
    j = dag_job()
    plan = run(view(j, pods(pod(j, "a", 0, phase)), podgroup(j)))
    assert "job-c-0" in created(plan)


def test_all_dependencies_are_needed_by_default() -> None:
    j = dag_job(deps=["a", "b"])
    plan = run(view(j, pods(pod(j, "a", 0)), podgroup(j)))
    assert "job-c-0" not in created(plan)
    plan = run(view(j, pods(pod(j, "a", 0), pod(j, "b", 1)), podgroup(j)))
    assert "job-c-0" in created(plan)


def test_iteration_any_needs_one_dependency() -> None:
    j = dag_job(iteration="any", deps=["a", "b"])
    plan = run(view(j, pods(pod(j, "b", 0)), podgroup(j)))
    assert "job-c-0" in created(plan)


def test_dependency_without_min_available_is_ready_at_once() -> None:
    j = job([task("a", 1), task("c", 1, depends_on=DependsOn(name=["a"]))], phase=JobPhase.PENDING, min_available=1)
    plan = run(view(j, {}, podgroup(j)))
    assert created(plan) == ["job-a-0", "job-c-0"]


def test_dependency_on_an_unknown_task_never_releases() -> None:
    j = job([task("c", 1, depends_on=DependsOn(name=["ghost"]))], phase=JobPhase.PENDING, min_available=1)
    assert created(run(view(j, {}, podgroup(j)))) == []


# --- plugins on add / update ------------------------------------------------------------------------------


def test_plugins_add_their_objects_once_and_mark_controlled_resources() -> None:
    j = new_job(plugins={"svc": [], "env": []})
    first = run(view(j, {}, None))
    assert [type(w.obj).__name__ for w in first.objects_to_write] == ["ConfigMap", "Service", "NetworkPolicy"]
    assert first.status is not None and first.status.controlled_resources == {"plugin-env": "env", "plugin-svc": "svc"}
    again = run(view(replace(j, status=first.status), {}, podgroup(j, "Pending")))
    assert again.objects_to_write == ()


def test_plugins_update_hosts_of_an_initiated_job() -> None:
    j = with_status(new_job(phase=JobPhase.RUNNING, plugins={"svc": []}), controlled_resources={"plugin-svc": "svc"})
    plan = run(view(j, {}, podgroup(j, "Running")))
    assert [type(w.obj).__name__ for w in plan.objects_to_write] == ["ConfigMap"]


def test_status_written_only_when_something_changed() -> None:
    j = new_job(phase=JobPhase.PENDING)
    j = replace(j, status=replace(j.status or JobStatus(), pending=0))
    plan = run(view(j, {}, podgroup(j, "Pending")))
    assert plan.status is None
    assert phase_after(plan, j) == JobPhase.PENDING


def test_held_counts_wait_for_a_later_pass_and_record_nothing_meanwhile() -> None:
    """hold_counts (the shell holds a change of counts until it settles): pods moving, and the task's
    phase they sum to, are not written now; the pass that writes them records the task's change at the
    time it was first held; the job's phase is written at once."""
    j = job([task("worker", 3)], phase=JobPhase.PENDING, min_available=3)
    one_running = pods(pod(j, "worker", 0, "Running"), pod(j, "worker", 1, "Pending"), pod(j, "worker", 2, "Pending"))
    first = run(view(j, one_running, podgroup(j, "Running")), hold_counts=True)
    assert first.status is None and first.status_held and first.events == ()  # the task became Running: held
    assert first.held_tasks == (("worker", "Running"),)
    two_running = {**one_running, **pods(pod(j, "worker", 1, "Running"))}
    held = run(view(j, two_running, podgroup(j, "Running")), hold_counts=True)
    assert held.status is None and held.status_held and held.events == ()
    first_seen = NOW - timedelta(seconds=1)
    written = run(view(j, two_running, podgroup(j, "Running")), tasks_seen={"worker": ("Running", first_seen)})
    assert written.status is not None and written.status.running == 2 and not written.status_held
    assert [(e.reason, e.phase, e.occurred_at) for e in written.events if e.kind == "Task"] == [
        ("PhaseChanged", "Running", rfc3339(first_seen))
    ]
    j = replace(j, status=written.status)
    all_running = {**two_running, **pods(pod(j, "worker", 2, "Running"))}
    phase = run(view(j, all_running, podgroup(j, "Running")), hold_counts=True)
    assert phase.status is not None and phase_after(phase, j) == JobPhase.RUNNING


def test_a_written_change_stamps_each_task_when_it_was_first_seen_in_the_phase_it_reached() -> None:
    """Only a task that reached the phase the shell saw it held at takes that time; a task that moved
    later, or on to another phase since, is stamped now."""
    j = job([task("a", 1), task("b", 1), task("c", 1)], phase=JobPhase.PENDING, min_available=3)
    running = pods(pod(j, "a", 0, "Running"), pod(j, "b", 0, "Running"), pod(j, "c", 0, "Running"))
    a_seen, c_seen = NOW - timedelta(seconds=0.9), NOW - timedelta(seconds=0.5)
    seen = {"a": ("Running", a_seen), "c": ("Pending", c_seen)}  # c was held Pending, is Running now
    plan = run(view(j, running, podgroup(j, "Running")), tasks_seen=seen)
    stamps = {e.task: e.occurred_at for e in plan.events if e.kind == "Task"}
    assert stamps == {"a": rfc3339(a_seen), "b": rfc3339(NOW), "c": rfc3339(NOW)}

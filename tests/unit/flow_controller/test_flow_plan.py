"""A JobFlow's sync, on Volcano's own example (a -> b -> {c, d} -> e, jobRetainPolicy: delete)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from tests.unit.flow_controller.builders import example_flow, example_templates, with_phase
from vc_flow_controller.logic.flow_jobs import build_flow_job, template_of
from vc_flow_controller.logic.flow_plan import plan_flow
from vc_flow_controller.logic.flow_status import MAX_RUNNING_HISTORIES, next_phase
from vc_flow_controller.logic.owners import owner_key
from vc_proto.batch import Job
from vc_proto.flow import CREATED_BY_JOB_FLOW, CREATED_BY_JOB_TEMPLATE, FlowState, JobFlow, JobFlowStatus

NOW = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
TEMPLATES = example_templates()


def job(template: str, phase: str, flow: JobFlow | None = None) -> Job:
    return with_phase(build_flow_job(flow or example_flow(), TEMPLATES[template]), phase)


def names(jobs: tuple[Job, ...]) -> list[str]:
    return sorted(j.metadata.name or "" for j in jobs)


def with_state(flow: JobFlow, phase: str) -> JobFlow:
    return msgspec.structs.replace(flow, status=JobFlowStatus(state=FlowState(phase=phase)))


def test_a_new_flow_starts_only_the_flows_without_targets() -> None:
    plan = plan_flow(example_flow(), [], TEMPLATES, NOW)
    assert names(plan.create) == ["test-a"]
    assert plan.status is not None and plan.status.state == FlowState(phase="Pending")


def test_the_job_is_the_template_named_after_flow_and_template_labelled_and_owned_by_the_flow() -> None:
    created = plan_flow(example_flow(), [], TEMPLATES, NOW).create[0]
    assert created.metadata.name == "test-a" and created.metadata.namespace == "default"
    assert created.spec == TEMPLATES["a"].spec
    marks = {CREATED_BY_JOB_TEMPLATE: "default.a", CREATED_BY_JOB_FLOW: "default.test"}
    assert created.metadata.labels == marks and created.metadata.annotations == marks
    assert owner_key(created) == ("JobFlow", "default", "test")
    ref = (created.metadata.owner_references or [])[0]
    assert (ref.uid, ref.controller, ref.block_owner_deletion) == ("flow-uid", True, True)
    assert template_of(created) == ("default", "a")


def test_a_flow_waits_until_every_target_is_completed() -> None:
    running = [job("a", "Completed"), job("b", "Completed"), job("c", "Completed"), job("d", "Running")]
    assert names(plan_flow(example_flow(), running, TEMPLATES, NOW).create) == []
    done = [*running[:3], job("d", "Completed")]
    assert names(plan_flow(example_flow(), done, TEMPLATES, NOW).create) == ["test-e"]


def test_parallel_branches_start_together_once_their_shared_target_completes() -> None:
    plan = plan_flow(example_flow(), [job("a", "Completed"), job("b", "Completed")], TEMPLATES, NOW)
    assert names(plan.create) == ["test-c", "test-d"]


def test_a_missing_template_is_waited_for_and_named() -> None:
    templates = {k: v for k, v in TEMPLATES.items() if k != "b"}
    plan = plan_flow(example_flow(), [job("a", "Completed")], templates, NOW)
    assert plan.create == () and plan.missing_templates == ("b",)


def test_status_lists_jobs_by_phase_with_per_job_entries_and_conditions() -> None:
    flow = with_state(example_flow(), "Running")
    jobs = [job("a", "Completed"), job("b", "Running"), job("c", "Aborted")]
    status = plan_flow(flow, jobs, TEMPLATES, NOW).status
    assert status is not None
    assert (status.completed_jobs, status.running_jobs, status.un_know_jobs) == (["test-a"], ["test-b"], ["test-c"])
    assert [entry.name for entry in status.job_status_list or []] == ["test-a", "test-b", "test-c"]
    assert status.conditions is not None and status.conditions["test-b"].phase == "Running"
    history = (status.job_status_list or [])[1].running_histories or []
    assert [(h.state, h.start_timestamp) for h in history] == [("Running", "2026-01-01T00:05:00Z")]


def test_running_histories_close_the_previous_phase_when_it_changes() -> None:
    first = plan_flow(with_state(example_flow(), "Running"), [job("a", "Running")], TEMPLATES, NOW).status
    flow = msgspec.structs.replace(example_flow(), status=first)
    later = datetime(2026, 1, 1, 0, 9, tzinfo=UTC)
    status = plan_flow(flow, [job("a", "Completed")], TEMPLATES, later).status
    assert status is not None
    history = (status.job_status_list or [])[0].running_histories or []
    assert [(h.state, h.start_timestamp, h.end_timestamp) for h in history] == [
        ("Running", "2026-01-01T00:05:00Z", "2026-01-01T00:09:00Z"),
        ("Completed", "2026-01-01T00:09:00Z", None),
    ]


def test_the_flow_phase_follows_volcano_states() -> None:
    def status(**lists: list[str]) -> JobFlowStatus:
        return JobFlowStatus(**lists)  # type: ignore[arg-type]

    assert next_phase("", status(), flows=5) == "Pending"
    assert next_phase("Pending", status(running_jobs=["x"]), flows=5) == "Running"
    assert next_phase("Pending", status(completed_jobs=["x"], failed_jobs=["y"]), flows=5) == "Failed"
    assert next_phase("Pending", status(terminated_jobs=["x"]), flows=5) == "Failed"
    assert next_phase("Running", status(completed_jobs=list("abcde")), flows=5) == "Succeed"
    assert next_phase("Running", status(completed_jobs=list("abcd")), flows=5) == "Running"
    assert next_phase("Running", status(failed_jobs=["x"]), flows=5) == "Failed"
    assert next_phase("Succeed", status(failed_jobs=["x"]), flows=5) == "Succeed"


def test_a_failed_flow_does_nothing_more() -> None:
    plan = plan_flow(with_state(example_flow(), "Failed"), [job("a", "Completed")], TEMPLATES, NOW)
    assert plan.create == () and plan.delete == () and plan.status is None


def test_retain_policy_delete_removes_every_job_once_the_flow_succeeded() -> None:
    jobs = [job(t, "Completed") for t in "abcde"]
    plan = plan_flow(with_state(example_flow(), "Succeed"), jobs, TEMPLATES, NOW)
    assert names(plan.delete) == [f"test-{t}" for t in "abcde"] and plan.create == () and plan.status is None


def test_retain_policy_retain_keeps_the_jobs() -> None:
    flow = with_state(example_flow(), "Succeed")
    flow = msgspec.structs.replace(flow, spec=msgspec.structs.replace(flow.spec, job_retain_policy="retain"))
    assert plan_flow(flow, [job(t, "Completed") for t in "abcde"], TEMPLATES, NOW).delete == ()


def test_an_unchanged_status_is_not_written_again() -> None:
    flow = example_flow()
    first = plan_flow(flow, [job("a", "Pending")], TEMPLATES, NOW).status
    again = plan_flow(msgspec.structs.replace(flow, status=first), [job("a", "Pending")], TEMPLATES, NOW)
    assert again.status is None


def test_a_jobs_phase_history_keeps_only_the_newest_entries() -> None:
    flow = with_state(example_flow(), "Running")
    for minute in range(MAX_RUNNING_HISTORIES + 10):
        phase = "Running" if minute % 2 else "Restarting"
        status = plan_flow(flow, [job("a", phase)], TEMPLATES, NOW.replace(minute=minute % 60)).status
        if status is not None:
            flow = msgspec.structs.replace(flow, status=status)
    history = ((flow.status.job_status_list if flow.status else None) or [])[0].running_histories or []
    assert len(history) == MAX_RUNNING_HISTORIES and history[-1].state == "Running"

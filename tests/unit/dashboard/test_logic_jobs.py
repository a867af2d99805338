"""Job rows: phase, queue, task counts from status.taskStatusCount, and the why-pending verdict."""

from __future__ import annotations

from tests.unit.dashboard.dashboard_builders import job, podgroup, unschedulable
from vc_dashboard.logic.jobs import JobFilter, job_row, phase_counts, select_jobs
from vc_dashboard.logic.verdict import latest_unschedulable, pending_verdict

WHY = 'Why: queue "team" capability would be exceeded (nvidia.com/gpu: allocated 4 + request 1 > capability 4)'


def test_task_counts_come_from_task_status_count() -> None:
    j = job(
        "tf",
        tasks={"ps": 1, "worker": 4},
        phase="Running",
        counts={"ps": {"Running": 1}, "worker": {"Running": 3, "Pending": 1}},
    )
    row = job_row(j, None)
    assert (row.namespace, row.name, row.queue, row.phase, row.replicas) == ("default", "tf", "default", "Running", 5)
    assert [(t.name, t.replicas, t.counts["Running"], t.counts["Pending"]) for t in row.tasks] == [
        ("ps", 1, 1, 0),
        ("worker", 4, 3, 1),
    ]
    assert row.counts == {"Pending": 1, "Running": 4, "Succeeded": 0, "Failed": 0, "Unknown": 0}
    assert not row.finished and row.verdict is None


def test_a_job_without_status_is_pending() -> None:
    assert job_row(job("new"), None).phase == "Pending"


def test_the_verdict_shows_while_the_job_waits_and_not_after() -> None:
    waiting = podgroup(
        "gpu",
        phase="Inqueue",
        conditions=[unschedulable("old", at="2026-01-01T00:00:01Z"), unschedulable(WHY, at="2026-01-01T00:00:09Z")],
    )
    verdict = job_row(job("gpu", phase="Pending"), waiting).verdict
    assert verdict is not None and verdict.message == WHY and verdict.since == "2026-01-01T00:00:09Z"
    running = podgroup("gpu", phase="Running", conditions=[unschedulable(WHY)])
    assert pending_verdict("Running", running) is None
    assert pending_verdict("Pending", running) is None  # the group is placed: the old verdict explains nothing
    assert latest_unschedulable(running) is not None  # still readable for the job page's history
    cleared = podgroup("gpu", conditions=[{**unschedulable(WHY), "status": "False"}])
    assert pending_verdict("Pending", cleared) is None
    assert pending_verdict("Pending", None) is None


def test_filters_and_newest_first() -> None:
    jobs = [
        job("a", created="2026-01-01T00:00:01Z", phase="Running"),
        job("b", created="2026-01-01T00:00:03Z", queue_name="research"),
        job("c", created="2026-01-01T00:00:02Z", namespace="team", phase="Running"),
        job("d", created="2026-01-01T00:00:03Z", phase="Completed"),
    ]
    assert [j.metadata.name for j in select_jobs(jobs, JobFilter())] == ["b", "d", "c", "a"]
    assert [j.metadata.name for j in select_jobs(jobs, JobFilter(phase="Running"))] == ["c", "a"]
    assert [j.metadata.name for j in select_jobs(jobs, JobFilter(queue="research"))] == ["b"]
    assert [j.metadata.name for j in select_jobs(jobs, JobFilter(namespace="team"))] == ["c"]
    assert phase_counts(jobs) == {"Completed": 1, "Pending": 1, "Running": 2}


def test_the_verdict_reads_the_explanation_first_and_volcano_s_text_after() -> None:
    volcano = "10/0 tasks in gang unschedulable: pod group is not ready, 10 minAvailable"
    why = (
        "Needs 40 nvidia.com/gpu for 10 pods; the cluster has 32 nvidia.com/gpu in all: it can never run as submitted."
    )
    waiting = podgroup("gpu", phase="Pending", conditions=[unschedulable(f"{volcano}. Why: {why}")])
    verdict = job_row(job("gpu", phase="Pending"), waiting).verdict
    assert verdict is not None and verdict.message == f"{why} Scheduler detail: {volcano}."

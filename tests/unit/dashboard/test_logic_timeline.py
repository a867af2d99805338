"""A job's timeline from its history: lanes for the job, its tasks and their pods (bounded)."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.unit.dashboard.dashboard_builders import event
from vc_dashboard.logic.timeline import MAX_POD_LANES, build_timeline

T0 = "2026-01-01T00:00:00Z"


def at(seconds: int) -> str:
    return f"2026-01-01T00:00:{seconds:02d}Z"


HISTORY = [
    event("Task", "worker", "PhaseChanged", at(0), phase="Pending", task="worker"),
    event("Pod", "j-worker-0", "PodBound", at(1), task="worker"),
    event("Pod", "j-worker-0", "PodStarted", at(2), phase="Running", task="worker"),
    event("Job", "j", "PhaseChanged", at(2), phase="Running"),
    event("Task", "worker", "PhaseChanged", at(2), phase="Running", task="worker"),
    event("PodGroup", "j-pg", "Scheduled", at(1)),  # not drawn: no lane for PodGroup facts
    event("Pod", "j-worker-0", "PodExited", at(8), phase="Succeeded", task="worker", exit_code=0),
    event("Task", "worker", "PhaseChanged", at(8), phase="Completed", task="worker"),
    event("Job", "j", "PhaseChanged", at(10), phase="Completed"),
]


def test_lanes_segments_and_marks_of_a_finished_job() -> None:
    timeline = build_timeline(HISTORY, now=None)
    assert timeline.start == datetime(2026, 1, 1, tzinfo=UTC) and timeline.span == 10
    lanes = {(lane.kind, lane.label): lane for lane in timeline.lanes}
    assert list(lanes) == [("Job", "j"), ("Task", "worker"), ("Pod", "j-worker-0")]
    pod = lanes[("Pod", "j-worker-0")]
    assert [(s.phase, s.start, s.end) for s in pod.segments] == [("Bound", 1, 2), ("Running", 2, 8)]
    assert [(m.phase, m.at) for m in pod.marks] == [("Succeeded", 8)]
    assert "exit 0" in pod.marks[0].title
    task = lanes[("Task", "worker")]
    assert [(s.phase, s.start, s.end) for s in task.segments] == [("Pending", 0, 2), ("Running", 2, 8)]
    job = lanes[("Job", "j")]
    assert [(s.phase, s.end) for s in job.segments] == [("Running", 10)] and job.marks[0].phase == "Completed"
    assert timeline.pct(5) == 50.0 and timeline.pct(99) == 100.0


def test_a_live_job_runs_until_now() -> None:
    now = datetime(2026, 1, 1, 0, 0, 20, tzinfo=UTC)
    timeline = build_timeline(HISTORY[:5], now=now)
    assert timeline.span == 20
    job = next(lane for lane in timeline.lanes if lane.kind == "Job")
    assert [(s.phase, s.start, s.end) for s in job.segments] == [("Running", 2, 20)]


def test_pod_lanes_are_bounded_and_the_rest_counted() -> None:
    many = [event("Pod", f"p-{i:05d}", "PodBound", T0, task="w") for i in range(MAX_POD_LANES + 25)]
    timeline = build_timeline(many, now=None)
    assert sum(lane.kind == "Pod" for lane in timeline.lanes) == MAX_POD_LANES
    assert timeline.hidden_pods == 25
    assert timeline.span == 1  # everything at one instant still draws


def test_no_history_and_unreadable_times_make_an_empty_timeline() -> None:
    assert build_timeline([], now=None).empty
    assert build_timeline([event("Job", "j", "PhaseChanged", "yesterday", phase="Running")], now=None).empty

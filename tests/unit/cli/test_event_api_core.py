"""The client API's pure parts: cursors, what a selection asks the server for and what it keeps, the
queue of a job told by its earlier events, CloudEvents, and the example consumer's arithmetic."""

from __future__ import annotations

import pytest

from examples.job_stats import JobStats
from vc_cli.sdk.cloudevents import to_cloudevent
from vc_cli.sdk.cursor import Cursor, parse_cursor
from vc_cli.sdk.reading import Event
from vc_cli.sdk.selection import JobQueues, select_events
from vc_core.errors import InvalidObject
from vc_proto.events import DomainEvent


def fact(
    kind: str = "Pod", *, name: str = "p", job: str | None = "train", queue: str | None = None, **kw: object
) -> DomainEvent:
    fields: dict[str, object] = {"namespace": "team-a", **kw}
    return DomainEvent(
        id=f"{kind}-{name}-{fields}",
        occurred_at="2026-01-01T00:00:00Z",
        source="test",
        kind=kind,
        name=name,
        reason=str(fields.pop("reason", "PodStarted")),
        job=job,
        queue=queue,
        **fields,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("text", "cursor"),
    [("7", Cursor(7)), (7, Cursor(7)), ("7.2", Cursor(7, 2)), (" 12.0 ", Cursor(12))],
)
def test_a_cursor_reads_as_its_sequence_and_index(text: str | int, cursor: Cursor) -> None:
    assert parse_cursor(text) == cursor
    assert parse_cursor(str(cursor)) == cursor


@pytest.mark.parametrize("text", ["", "x", "7.", ".2", "-1", "0", "7.2.1", "1e3", "9" * 41])
def test_a_cursor_that_is_not_seq_or_seq_index_is_refused_naming_the_argument(text: str) -> None:
    with pytest.raises(InvalidObject) as caught:
        parse_cursor(text)
    assert (caught.value.field, caught.value.rule) == ("since", "cursor")


def test_cursors_order_by_message_then_place_in_it() -> None:
    assert Cursor(2) < Cursor(2, 1) < Cursor(3) and str(Cursor(2, 1)) == "2.1" and str(Cursor(3)) == "3"


@pytest.mark.parametrize(
    ("filters", "subject"),
    [
        ({}, "vc.evt.>"),
        ({"namespace": "team-a"}, "vc.evt.*.team-a.*"),
        ({"namespace": "team-a", "job": "a.b"}, "vc.evt.job.team-a.a_b"),
        ({"queue": "q1", "kinds": ["pod", "Job"]}, "vc.evt.>"),
    ],
)
def test_the_server_selects_by_namespace_and_job_in_the_subject(filters: dict[str, object], subject: str) -> None:
    assert select_events(**filters).subject == subject  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("filters", "field", "rule"),
    [
        ({"namespace": "Team_A"}, "namespace", "dns1123-label"),
        ({"namespace": "*"}, "namespace", "dns1123-label"),
        ({"job": "train"}, "job", "needs-namespace"),
        ({"namespace": "a", "job": "x y"}, "job", "dns1123-subdomain"),
        ({"queue": ">"}, "queue", "dns1123-subdomain"),
        ({"kinds": ["Pods"]}, "kinds", "enum"),
        ({"kinds": []}, "kinds", "non-empty"),
    ],
)
def test_a_bad_filter_is_refused_naming_it_and_its_rule(filters: dict[str, object], field: str, rule: str) -> None:
    with pytest.raises(InvalidObject) as caught:
        select_events(**filters)  # type: ignore[arg-type]
    assert (caught.value.field, caught.value.rule) == (field, rule)


def test_kind_and_queue_are_selected_on_the_event() -> None:
    pods_in_q1 = select_events(queue="q1", kinds="pod,queue")
    assert pods_in_q1.kinds == {"Pod", "Queue"}
    assert pods_in_q1.accepts(fact(), "q1") and not pods_in_q1.accepts(fact(), "q2")
    assert not pods_in_q1.accepts(fact(), None)  # a job whose queue nobody told
    assert not pods_in_q1.accepts(fact("Job", queue="q1"), "q1")
    assert pods_in_q1.accepts(fact("Queue", name="q1", job=None, namespace=None), None)
    assert not pods_in_q1.accepts(fact("Queue", name="q2", job=None, namespace=None), None)


def test_a_jobs_queue_is_learnt_from_its_events_that_say_it() -> None:
    queues = JobQueues()
    assert queues.queue_of(fact()) is None
    assert queues.queue_of(fact("Job", queue="q1")) == "q1"
    assert queues.queue_of(fact()) == "q1"
    assert queues.queue_of(fact(namespace="team-b")) is None  # the same name in another namespace
    queues.remember("team-b", "train", "q2")
    assert queues.queue_of(fact(namespace="team-b")) == "q2"


def test_an_event_as_a_cloudevent() -> None:
    event = fact("Pod", name="train-w-0", reason="PodExited", exit_code=3)
    cloud = to_cloudevent(event, Cursor(41, 2))
    assert cloud["specversion"] == "1.0" and cloud["id"] == event.id
    assert (cloud["type"], cloud["subject"], cloud["source"]) == (
        "dev.tephra.pod.PodExited",
        "team-a/Pod/train-w-0",
        "tephra/test",
    )
    assert cloud["tephracursor"] == "41.2" and cloud["data"]["exitCode"] == 3 and cloud["time"] == event.occurred_at
    queue = to_cloudevent(fact("Queue", name="q1", job=None, namespace=None), Cursor(1))
    assert queue["subject"] == "Queue/q1"


def phase(job: str, at: str, phase: str, previous: str | None, *, queue: str = "q1") -> Event:
    event = DomainEvent(
        id=f"{job}-{phase}",
        occurred_at=at,
        source="job-controller",
        kind="Job",
        namespace="ns",
        name=job,
        reason="PhaseChanged",
        job=job,
        queue=queue,
        phase=phase,
        previous_phase=previous,
    )
    return Event(Cursor(1), event)


def test_the_example_measures_each_jobs_wait_and_run_and_sums_them_per_queue() -> None:
    stats = JobStats()
    for item in [
        phase("a", "2026-01-01T00:00:00Z", "Pending", None),
        phase("b", "2026-01-01T00:00:01Z", "Pending", None),
        phase("a", "2026-01-01T00:00:04Z", "Running", "Pending"),
        phase("c", "2026-01-01T00:00:05Z", "Pending", None, queue="q2"),
        phase("b", "2026-01-01T00:00:11Z", "Running", "Pending"),
        phase("a", "2026-01-01T00:01:04Z", "Completed", "Running"),
        phase("b", "2026-01-01T00:00:15Z", "Restarting", "Running"),
        phase("b", "2026-01-01T00:00:20Z", "Running", "Pending"),  # started once: at its first Running
        phase("b", "2026-01-01T00:00:41Z", "Failed", "Running"),
    ]:
        stats.add(item)
    assert [(r["job"], r["queue"], r["phase"], r["wait_s"], r["run_s"]) for r in stats.job_rows()] == [
        ("a", "q1", "Completed", "4", "60"),
        ("b", "q1", "Failed", "10", "30"),
        ("c", "q2", "Pending", "", ""),
    ]
    assert stats.queue_rows() == [
        {
            "queue": "q1",
            "jobs": 2,
            "started": 2,
            "finished": 2,
            "mean_wait_s": "7",
            "max_wait_s": "10",
            "mean_run_s": "45",
            "max_run_s": "60",
        },
        {
            "queue": "q2",
            "jobs": 1,
            "started": 0,
            "finished": 0,
            "mean_wait_s": "",
            "max_wait_s": "",
            "mean_run_s": "",
            "max_run_s": "",
        },
    ]

"""gc expiry: which jobs are collected, and when (volcano-semantics 5.3)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from vc_gc.logic.expiry import expired, finished_at, finished_in_future
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, JobState, JobStatus
from vc_proto.meta import ObjectMeta

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def job(phase: str | None, *, ttl: int | None = 60, finished: str | None = "2026-11-22T11:59:00Z") -> Job:
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(name="j", namespace="ns", uid="u1"),
        spec=JobSpec(ttl_seconds_after_finished=ttl),
        status=JobStatus(state=JobState(phase=phase, last_transition_time=finished)),
    )


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        pytest.param("Completed", timedelta(0), id="completed"),
        pytest.param("Failed", timedelta(0), id="failed"),
        pytest.param("Terminated", timedelta(0), id="terminated"),
        pytest.param("Aborted", None, id="aborted-not-by-default"),
        pytest.param("Running", None, id="running"),
        pytest.param("Pending", None, id="pending"),
        pytest.param("Completing", None, id="completing"),
        pytest.param("Terminating", None, id="terminating"),
        pytest.param("Aborting", None, id="aborting"),
        pytest.param("Restarting", None, id="restarting"),
        pytest.param(None, None, id="no-phase"),
    ],
)
def test_each_phase(phase: str | None, expected: timedelta | None) -> None:
    assert expired(job(phase), NOW) == expected


@pytest.mark.parametrize(
    ("phase", "expected"), [("Aborted", timedelta(0)), ("Aborting", None), ("Completed", timedelta(0))]
)
def test_aborted_collected_when_configured(phase: str, expected: timedelta | None) -> None:
    assert expired(job(phase), NOW, gc_aborted=True) == expected


@pytest.mark.parametrize(
    ("ttl", "finished", "expected"),
    [
        pytest.param(60, "2026-11-22T11:59:30Z", timedelta(seconds=30), id="half-way"),
        pytest.param(60, "2026-11-22T11:59:00Z", timedelta(0), id="exactly-due"),
        pytest.param(60, "2026-11-22T11:00:00Z", timedelta(0), id="long-overdue-is-zero-not-negative"),
        pytest.param(0, "2026-11-22T12:00:00Z", timedelta(0), id="ttl-zero-at-once"),
        pytest.param(None, "2026-11-22T11:00:00Z", None, id="no-ttl-never"),
        pytest.param(60, None, None, id="missing-finish-time"),
        pytest.param(60, "", None, id="empty-finish-time"),
        pytest.param(60, "yesterday", None, id="unreadable-finish-time"),
        pytest.param(60, "2026-11-22T12:10:00Z", timedelta(minutes=11), id="future-finish-waits-ttl-after-it"),
        pytest.param(5, "2026-11-22T11:59:58.500Z", timedelta(seconds=3, milliseconds=500), id="fractional-seconds"),
        pytest.param(60, "2026-11-22T13:59:30+02:00", timedelta(seconds=30), id="offset-timestamp"),
    ],
)
def test_deadline_from_stored_finish_time(ttl: int | None, finished: str | None, expected: timedelta | None) -> None:
    assert expired(job("Completed", ttl=ttl, finished=finished), NOW) == expected


def test_future_finish_time_is_reported_and_never_due_before_it() -> None:
    skewed = job("Failed", ttl=0, finished="2026-11-22T12:00:05Z")
    assert finished_in_future(skewed, NOW)
    assert expired(skewed, NOW) == timedelta(seconds=5)
    assert expired(skewed, NOW + timedelta(seconds=5)) == timedelta(0)
    assert not finished_in_future(job("Failed"), NOW)


def test_deadline_does_not_depend_on_when_it_is_asked() -> None:
    """A restarted gc recomputes the same deadline from the stored fields."""
    j = job("Completed", ttl=60, finished="2026-11-22T11:59:30Z")
    first = NOW + expired(j, NOW)  # type: ignore[operator]
    later = NOW + timedelta(seconds=20)
    assert later + expired(j, later) == first  # type: ignore[operator]


def test_naive_timestamps_are_utc() -> None:
    assert finished_at(job("Completed", finished="2026-11-22T11:59:00")) == datetime(2026, 11, 22, 11, 59, tzinfo=UTC)

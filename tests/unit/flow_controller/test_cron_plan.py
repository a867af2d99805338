"""A CronJob's sync on an injected clock, from Volcano's example (every 5 minutes, Forbid, deadline 60 s,
history 5 successful / 3 failed), and Kubernetes' rules for missed runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import msgspec
import pytest

from tests.unit.flow_controller.builders import example_cronjob, with_phase
from vc_flow_controller.logic.cron_jobs import build_cron_job
from vc_flow_controller.logic.cron_plan import CronPlan, plan_cron
from vc_flow_controller.logic.owners import owner_key
from vc_proto.batch import Job
from vc_proto.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION, CronJob, CronJobStatus, ObjectReference

T0 = datetime(2026, 1, 1, tzinfo=UTC)  # the CronJob's creation time


def at(minutes: float, seconds: float = 0) -> datetime:
    return T0 + timedelta(minutes=minutes, seconds=seconds)


def plan(cronjob: CronJob, now: datetime, jobs: list[Job] | None = None) -> CronPlan:
    jobs = jobs or []
    by_name = {j.metadata.name: j for j in jobs}
    return plan_cron(cronjob, jobs, by_name.get, now)


def active(cronjob: CronJob, *jobs: Job, last: datetime | None = None) -> CronJob:
    refs = [ObjectReference(kind="Job", namespace="default", name=j.metadata.name, uid=j.metadata.uid) for j in jobs]
    status = CronJobStatus(
        active=refs or None, last_schedule_time=last.strftime("%Y-%m-%dT%H:%M:%SZ") if last else None
    )
    return msgspec.structs.replace(cronjob, status=status)


def run_at(cronjob: CronJob, minute: int, phase: str, finished: datetime | None = None) -> Job:
    job = build_cron_job(cronjob, at(minute), UTC)
    stamp = (finished or at(minute, 30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return with_phase(job, phase, created=at(minute).strftime("%Y-%m-%dT%H:%M:%SZ"), finished=stamp)


def test_nothing_is_due_before_the_first_time_and_the_pass_comes_back_just_after_it() -> None:
    result = plan(example_cronjob(), at(3))
    assert result.create is None
    assert result.requeue == timedelta(minutes=2, milliseconds=100)


def test_the_job_of_a_due_time_is_named_by_its_unix_minute_annotated_and_owned() -> None:
    result = plan(example_cronjob(), at(5, 10))
    assert result.create is not None and result.scheduled == at(5)
    assert result.create.metadata.name == f"volcano-cronjob-example-{int(at(5).timestamp()) // 60}"
    assert (result.create.metadata.annotations or {})[SCHEDULED_TIMESTAMP_ANNOTATION] == "2026-01-01T00:05:00Z"
    assert owner_key(result.create) == ("CronJob", "default", "volcano-cronjob-example")
    assert result.create.spec == example_cronjob().spec.job_template.spec  # type: ignore[union-attr]
    assert result.requeue == timedelta(minutes=4, seconds=50, milliseconds=100)


def test_a_time_past_the_starting_deadline_is_skipped() -> None:
    result = plan(example_cronjob(), at(6, 5))  # 65 s after 00:05, deadline 60 s
    assert result.create is None


def test_after_a_long_outage_only_the_most_recent_missed_time_runs() -> None:
    cronjob = example_cronjob(startingDeadlineSeconds=None)
    result = plan(cronjob, at(62))
    assert result.scheduled == at(60) and not [n for n in result.notes if n.reason == "TooManyMissedTimes"]


def test_more_than_a_hundred_missed_times_are_reported() -> None:
    result = plan(example_cronjob(startingDeadlineSeconds=None), at(5 * 102))
    assert result.scheduled == at(5 * 102)
    assert [n.reason for n in result.notes] == ["TooManyMissedTimes"]


def test_a_time_already_run_is_not_run_again() -> None:
    cronjob = example_cronjob()
    job = run_at(cronjob, 5, "Running")
    assert plan(active(cronjob, job, last=at(5)), at(5, 20), [job]).create is None
    assert plan(active(cronjob, last=at(5)), at(5, 20)).create is None  # its job already finished and went


def test_forbid_skips_a_time_while_a_job_is_active() -> None:
    cronjob = example_cronjob(startingDeadlineSeconds=None)
    job = run_at(cronjob, 5, "Running")
    result = plan(active(cronjob, job, last=at(5)), at(10, 1), [job])
    assert result.create is None and [n.reason for n in result.notes] == ["ForbidConcurrent"]


def test_allow_runs_alongside_an_active_job() -> None:
    cronjob = example_cronjob(concurrencyPolicy="Allow")
    job = run_at(cronjob, 5, "Running")
    result = plan(active(cronjob, job, last=at(5)), at(10, 1), [job])
    assert result.create is not None and result.delete == ()


def test_replace_deletes_the_active_job_before_the_next_starts() -> None:
    cronjob = example_cronjob(concurrencyPolicy="Replace")
    job = run_at(cronjob, 5, "Running")
    result = plan(active(cronjob, job, last=at(5)), at(10, 1), [job])
    assert result.create is not None and result.delete == (job,) and result.status.active is None


def test_suspend_creates_nothing_but_still_tidies_the_status() -> None:
    cronjob = example_cronjob(suspend=True)
    job = run_at(cronjob, 5, "Completed")
    result = plan(active(cronjob, job, last=at(5)), at(10, 1), [job])
    assert result.create is None and result.requeue is None
    assert result.status.active is None and result.status.last_successful_time == "2026-01-01T00:05:30Z"


def test_finished_jobs_leave_active_and_the_latest_success_is_recorded() -> None:
    cronjob = example_cronjob()
    done, failed = run_at(cronjob, 5, "Completed", finished=at(7)), run_at(cronjob, 10, "Failed")
    result = plan(active(cronjob, done, failed, last=at(10)), at(12), [done, failed])
    assert result.status.active is None and result.status.last_successful_time == "2026-01-01T00:07:00Z"
    assert [n.reason for n in result.notes] == ["SawCompletedJob", "SawCompletedJob"]


@pytest.mark.parametrize(("phase", "limit"), [("Completed", 5), ("Failed", 3)], ids=["successful", "failed"])
def test_history_beyond_the_limit_is_deleted_oldest_first(phase: str, limit: int) -> None:
    cronjob = example_cronjob()
    jobs = [run_at(cronjob, 5 * i, phase) for i in range(1, limit + 3)]
    result = plan(active(cronjob, last=at(5 * (limit + 2))), at(5 * (limit + 2), 1), jobs)
    assert [j.metadata.name for j in result.delete] == [j.metadata.name for j in jobs[:2]]
    assert result.status.active is None


def test_a_terminated_job_is_finished_but_in_neither_history() -> None:
    cronjob = example_cronjob(failedJobsHistoryLimit=0, successfulJobsHistoryLimit=0)
    job = run_at(cronjob, 5, "Terminated")
    result = plan(active(cronjob, job, last=at(5)), at(6), [job])
    assert result.delete == () and result.status.active is None


def test_an_active_reference_to_a_job_that_is_gone_is_dropped() -> None:
    cronjob = example_cronjob()
    job = run_at(cronjob, 5, "Running")
    result = plan(active(cronjob, job, last=at(5)), at(6), [])
    assert result.status.active is None and [n.reason for n in result.notes] == ["StaleReference"]


def test_an_unlisted_unfinished_job_is_reported_not_adopted() -> None:
    cronjob = example_cronjob()
    job = run_at(cronjob, 5, "Running")
    result = plan(active(cronjob, last=at(5)), at(6), [job])
    assert result.status.active is None and [n.reason for n in result.notes] == ["UnexpectedJob"]


def test_time_zone_decides_the_wall_clock_time_and_the_annotation_offset() -> None:
    cronjob = example_cronjob(schedule="30 9 * * *", timeZone="Asia/Shanghai", startingDeadlineSeconds=None)
    result = plan(cronjob, datetime(2026, 1, 1, 2, 0, tzinfo=UTC))  # 10:00 in Shanghai
    assert result.scheduled == datetime(2026, 1, 1, 1, 30, tzinfo=UTC)
    annotation = (result.create.metadata.annotations or {})[SCHEDULED_TIMESTAMP_ANNOTATION]  # type: ignore[union-attr]
    assert annotation == "2026-01-01T09:30:00+08:00"
    assert datetime.fromisoformat(annotation).astimezone(ZoneInfo("UTC")) == result.scheduled


def test_an_unknown_time_zone_or_schedule_is_reported_and_nothing_runs() -> None:
    zone = plan(example_cronjob(timeZone="Mars/Olympus"), at(5, 1))
    schedule = plan(example_cronjob(schedule="61 * * * *"), at(5, 1))
    assert zone.create is None and [n.reason for n in zone.notes] == ["InvalidTimeZone"]
    assert schedule.create is None and [n.reason for n in schedule.notes] == ["InvalidSchedule"]


def test_every_schedules_run_from_the_last_run() -> None:
    cronjob = example_cronjob(schedule="@every 90s", startingDeadlineSeconds=None)
    assert plan(cronjob, at(1, 31)).scheduled == at(1, 30)
    assert plan(active(cronjob, last=at(1, 30)), at(2, 59)).scheduled is None

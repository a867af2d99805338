"""vcctl cronjob create|list|get|describe|delete: batch.volcano.sh/v1alpha1 CronJobs (Cron VolcanoJob)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from vc_cli.client import Tephra
from vc_cli.commands import workloads
from vc_cli.listing import Columns
from vc_cli.output import age
from vc_core.times import rfc3339
from vc_proto.cronjob import CronJob
from vc_validation.cronexpr import ScheduleError, next_after, parse_schedule
from vc_validation.timezones import UnknownTimeZone, load_zone


def _active(cronjob: CronJob) -> list[str]:
    return [ref.name or "" for ref in (cronjob.status.active if cronjob.status else None) or []]


def _last(cronjob: CronJob) -> str:
    stamp = cronjob.status.last_schedule_time if cronjob.status else None
    return age(stamp) if stamp else "<none>"


# kubectl's CronJob columns.
COLUMNS: Columns[CronJob] = Columns(
    headers=["Name", "Schedule", "TimeZone", "Suspend", "Active", "Last Schedule", "Age"],
    row=lambda c: [
        c.metadata.name,
        (c.spec.schedule if c.spec else None) or "",
        (c.spec.time_zone if c.spec else None) or "<none>",
        str(bool(c.spec and c.spec.suspend)),
        len(_active(c)),
        _last(c),
        age(c.metadata.creation_timestamp),
    ],
    wide_headers=["ConcurrencyPolicy"],
    wide_row=lambda c: [(c.spec.concurrency_policy if c.spec else None) or "Allow"],
)


def next_run(cronjob: CronJob, now: datetime) -> str | None:
    """When the schedule comes next (RFC 3339, UTC); None when suspended or unreadable."""
    spec = cronjob.spec
    if spec is None or spec.suspend or not spec.schedule:
        return None
    try:
        zone = load_zone(spec.time_zone) if spec.time_zone is not None else UTC
        moment = next_after(parse_schedule(spec.schedule), zone, now)
    except (ScheduleError, UnknownTimeZone):
        return None
    return rfc3339(moment) if moment is not None else None


def describe(cronjob: CronJob) -> list[str]:
    spec = cronjob.spec
    status = cronjob.status
    return workloads.field_lines(
        [
            ("Name", cronjob.metadata.name),
            ("Namespace", cronjob.metadata.namespace),
            ("Schedule", spec.schedule if spec else None),
            ("Time Zone", spec.time_zone if spec else None),
            ("Concurrency Policy", (spec.concurrency_policy if spec else None) or "Allow"),
            ("Suspend", bool(spec and spec.suspend)),
            ("Starting Deadline Seconds", spec.starting_deadline_seconds if spec else None),
            ("Successful Job History Limit", spec.successful_jobs_history_limit if spec else None),
            ("Failed Job History Limit", spec.failed_jobs_history_limit if spec else None),
            ("Last Schedule Time", status.last_schedule_time if status else None),
            ("Last Successful Time", status.last_successful_time if status else None),
            ("Next Schedule Time", next_run(cronjob, datetime.now(UTC))),
            ("Active Jobs", ", ".join(_active(cronjob))),
            ("Created", cronjob.metadata.creation_timestamp),
        ]
    )


WORKLOAD = workloads.Workload("cronjob", CronJob, COLUMNS, describe)


def add_parser(sub: argparse._SubParsersAction) -> None:
    workloads.add_verbs(sub, WORKLOAD, help="CronJobs: vcjobs started on a cron schedule (Cron VolcanoJob)")


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    return await workloads.run(WORKLOAD, tephra, args)

"""CronJob (batch.volcano.sh) defaulting and validation on CREATE and UPDATE.

Defaults are those Volcano's CRD applies (concurrencyPolicy Allow, suspend false, history limits 3
and 1), so a CronJob reads back as it would from Volcano. Validation is Volcano's `validateCronJob`
(schedule, timeZone, name) plus the CRD's enums and minimums, and the job template judged as the
vcjob it will become.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from msgspec.structs import replace

from vc_proto.cronjob import (
    DEFAULT_FAILED_JOBS_HISTORY_LIMIT,
    DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT,
    ConcurrencyPolicy,
    CronJob,
    CronJobSpec,
)
from vc_proto.scheduling import Queue
from vc_validation.cronexpr import ScheduleError, parse_schedule
from vc_validation.job_templates import validate_embedded_job_spec
from vc_validation.limits import INT32_MAX
from vc_validation.names import qualified_name_errors, validate_metadata_bounds
from vc_validation.timezones import validate_time_zone
from vc_validation.verdict import Violation
from vc_validation.workload_limits import MAX_CRONJOB_NAME_LENGTH, MAX_DEADLINE_SECONDS

DEFAULT_NAMESPACE = "default"
POLICIES = tuple(p.value for p in ConcurrencyPolicy)


def mutate_cronjob(cronjob: CronJob) -> CronJob:
    spec = cronjob.spec or CronJobSpec()
    spec = replace(
        spec,
        concurrency_policy=spec.concurrency_policy or ConcurrencyPolicy.ALLOW.value,
        suspend=spec.suspend if spec.suspend is not None else False,
        successful_jobs_history_limit=_or(spec.successful_jobs_history_limit, DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT),
        failed_jobs_history_limit=_or(spec.failed_jobs_history_limit, DEFAULT_FAILED_JOBS_HISTORY_LIMIT),
    )
    return replace(cronjob, spec=spec)


def _or(value: int | None, default: int) -> int:
    return value if value is not None else default


def validate_cronjob(cronjob: CronJob, queues: Mapping[str, Queue] | None = None) -> list[Violation]:
    spec = cronjob.spec or CronJobSpec()
    namespace = cronjob.metadata.namespace or DEFAULT_NAMESPACE
    template = spec.job_template
    return [
        *_name(cronjob.metadata.name or ""),
        *validate_metadata_bounds(cronjob.metadata),
        *validate_schedule(spec.schedule, path="spec.schedule"),
        *validate_time_zone(spec.time_zone, path="spec.timeZone"),
        *_numbers(spec),
        *_policy(spec.concurrency_policy),
        *(validate_metadata_bounds(template.metadata, path="spec.jobTemplate.metadata") if template else ()),
        *validate_embedded_job_spec(
            template.spec if template else None, path="spec.jobTemplate.spec", namespace=namespace, queues=queues
        ),
    ]


def _name(name: str) -> Iterator[Violation]:
    if len(name) > MAX_CRONJOB_NAME_LENGTH:
        yield Violation(
            "metadata.name",
            "cronjob-name",
            f"cronJob name must be no more than {MAX_CRONJOB_NAME_LENGTH} characters to accommodate job name suffix "
            "(max 63 total)",
        )
    elif errors := qualified_name_errors(name):
        yield Violation("metadata.name", "cronjob-name", f"invalid cronJob name {name!r}: {'; '.join(errors)}")


def validate_schedule(schedule: str | None, *, path: str) -> Iterator[Violation]:
    if not schedule:
        yield Violation(path, "schedule-required", "schedule is required, but got empty")
        return
    if "TZ" in schedule:
        message = "schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field"
        yield Violation(path, "schedule-time-zone", message)
        return
    try:
        parse_schedule(schedule)
    except ScheduleError as exc:
        yield Violation(path, "schedule", f"schedule is not a valid cron expression: {exc}")


def _numbers(spec: CronJobSpec) -> Iterator[Violation]:
    deadline = spec.starting_deadline_seconds
    if deadline is not None and not 0 <= deadline <= MAX_DEADLINE_SECONDS:
        yield Violation("spec.startingDeadlineSeconds", "starting-deadline", "must be greater than or equal to 0")
    for field, value in (
        ("successfulJobsHistoryLimit", spec.successful_jobs_history_limit),
        ("failedJobsHistoryLimit", spec.failed_jobs_history_limit),
    ):
        if value is not None and not 0 <= value <= INT32_MAX:
            yield Violation(f"spec.{field}", "history-limit", f"must be between 0 and {INT32_MAX}, got {value}")


def _policy(policy: str | None) -> Iterator[Violation]:
    if policy not in (None, "", *POLICIES):
        allowed = ", ".join(POLICIES)
        message = f"must be one of {allowed}, got {str(policy)[:64]!r}"
        yield Violation("spec.concurrencyPolicy", "concurrency-policy", message)

"""The vcjob a CronJob makes for one scheduled time (Volcano's `getJobFromTemplate`). Pure.

Named `<cronjob>-<scheduled time in Unix minutes>`, so a time is never run twice even across restarts;
labels and annotations from `spec.jobTemplate.metadata`, plus `volcano.sh/cronjob-scheduled-timestamp`
(the scheduled time, RFC 3339 in the CronJob's time zone); controlled by the CronJob.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from vc_flow_controller.logic.owners import reference_to
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.cronjob import SCHEDULED_TIMESTAMP_ANNOTATION, CronJob
from vc_proto.meta import ObjectMeta


def cron_job_name(cronjob: CronJob, scheduled: datetime) -> str:
    return f"{cronjob.metadata.name}-{int(scheduled.timestamp()) // 60}"


def build_cron_job(cronjob: CronJob, scheduled: datetime, zone: tzinfo) -> Job:
    template = cronjob.spec.job_template if cronjob.spec else None
    meta = template.metadata if template and template.metadata else ObjectMeta()
    annotations = {**(meta.annotations or {}), SCHEDULED_TIMESTAMP_ANNOTATION: _go_rfc3339(scheduled, zone)}
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(
            name=cron_job_name(cronjob, scheduled),
            namespace=cronjob.metadata.namespace,
            labels=dict(meta.labels) if meta.labels else None,
            annotations=annotations,
            owner_references=[reference_to(cronjob)],
        ),
        spec=template.spec if template else None,
    )


def _go_rfc3339(moment: datetime, zone: tzinfo) -> str:
    """Go's time.RFC3339 layout: `Z` in UTC, else the numeric offset (`2026-03-29T02:30:00+02:00`)."""
    local = moment.astimezone(zone).replace(microsecond=0)
    text = local.isoformat()
    return text[: -len("+00:00")] + "Z" if text.endswith("+00:00") else text

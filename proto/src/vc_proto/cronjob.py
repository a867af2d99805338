"""batch.volcano.sh/v1alpha1 CronJob (Cron VolcanoJob): every Volcano field under its Volcano name.

The cron controller creates a vcjob `<cronjob>-<scheduled time in Unix minutes>` from
`spec.jobTemplate` at each scheduled time, as Kubernetes' CronJob does for batch/v1 Jobs.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from vc_proto.base import Wire
from vc_proto.batch import JobSpec
from vc_proto.meta import ObjectMeta

# The scheduled time a job was created for (RFC 3339, in the CronJob's time zone), as Volcano writes it.
SCHEDULED_TIMESTAMP_ANNOTATION: Final = "volcano.sh/cronjob-scheduled-timestamp"
# Defaults Volcano's CRD applies (kubebuilder:default).
DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: Final = 3
DEFAULT_FAILED_JOBS_HISTORY_LIMIT: Final = 1


class ConcurrencyPolicy(StrEnum):
    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


class ObjectReference(Wire, frozen=True, kw_only=True):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class CronJobTemplateSpec(Wire, frozen=True, kw_only=True):
    """Volcano's batch `JobTemplateSpec`: the metadata and spec of the jobs a CronJob creates."""

    metadata: ObjectMeta | None = None
    spec: JobSpec | None = None


class CronJobSpec(Wire, frozen=True, kw_only=True):
    schedule: str | None = None
    time_zone: str | None = None
    starting_deadline_seconds: int | None = None
    concurrency_policy: str | None = None
    suspend: bool | None = None
    job_template: CronJobTemplateSpec | None = None
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None


class CronJobStatus(Wire, frozen=True, kw_only=True):
    active: list[ObjectReference] | None = None
    last_schedule_time: str | None = None
    last_successful_time: str | None = None


class CronJob(Wire, frozen=True, kw_only=True, tag_field="kind", tag="CronJob"):
    api_version: str
    metadata: ObjectMeta
    spec: CronJobSpec | None = None
    status: CronJobStatus | None = None

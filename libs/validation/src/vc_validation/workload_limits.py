"""Bounds on JobFlows, JobTemplates and CronJobs (every count and size a user gives is bounded)."""

from __future__ import annotations

from typing import Final

MAX_FLOWS: Final = 128
MAX_PROBES_PER_KIND: Final = 64
MAX_PROBE_PATH_LENGTH: Final = 2048
MAX_HEADER_NAME_LENGTH: Final = 256
MAX_HEADER_VALUE_LENGTH: Final = 4096
MAX_TASK_NAME_LENGTH: Final = 253
MAX_PHASE_LENGTH: Final = 63
MAX_PORT: Final = 65535
# A vcjob's name is at most 63 characters (it prefixes its pods' names and is a label value).
MAX_JOB_NAME_LENGTH: Final = 63
# Volcano: a CronJob's name leaves room for the `-<minutes>` suffix of its jobs' names (63 in all).
MAX_CRONJOB_NAME_LENGTH: Final = 52
MAX_TIME_ZONE_LENGTH: Final = 64
# int64 seconds (Kubernetes' field); larger would overflow the apiserver's own arithmetic.
MAX_DEADLINE_SECONDS: Final = 2**63 - 1

"""Counters of the flow controller's work."""

from __future__ import annotations

from prometheus_client import Counter

JOBS_CREATED = Counter("tephra_flow_controller_jobs_created_total", "vcjobs created", ["owner_kind"])
JOBS_DELETED = Counter("tephra_flow_controller_jobs_deleted_total", "vcjobs deleted", ["owner_kind", "reason"])
STATUS_WRITES = Counter("tephra_flow_controller_status_writes_total", "Status writes", ["kind"])
NOTES = Counter("tephra_flow_controller_notes_total", "Events noted on CronJobs and JobFlows", ["kind", "reason"])

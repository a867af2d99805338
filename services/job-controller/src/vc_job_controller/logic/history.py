"""History records: the job, task and pod transitions `decide` reports (beyond Volcano).

Volcano users built side systems just to see what happened to each task and pod. Every Plan carries
these records; the shell stamps them with an id and its source and publishes them on the job's
subject (`vc.evt.job.<ns>.<job>`), so a job's whole history reads as one ordered list. Field names
match `vc_proto.events.DomainEvent` so the mapping is one line per field.
"""

from __future__ import annotations

from typing import Final

import msgspec

# `reason` values, stable CamelCase (the same strings as vc_proto.events).
PHASE_CHANGED: Final = "PhaseChanged"
POD_CREATED: Final = "PodCreated"
POD_STARTED: Final = "PodStarted"
POD_EXITED: Final = "PodExited"
POD_DELETED: Final = "PodDeleted"
POD_EVICTED: Final = "PodEvicted"
POD_PHASE_CHANGED: Final = "PodPhaseChanged"
ACTION_EXECUTED: Final = "ExecuteAction"
ACTION_DELAYED: Final = "ActionDelayed"
COMMAND_ISSUED: Final = "CommandIssued"
PLUGIN_ERROR: Final = "PluginError"

JOB_KIND: Final = "Job"
TASK_KIND: Final = "Task"
POD_KIND: Final = "Pod"


class HistoryEvent(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    occurred_at: str
    kind: str
    namespace: str
    name: str
    reason: str
    message: str | None = None
    job: str | None = None
    task: str | None = None
    uid: str | None = None
    phase: str | None = None
    previous_phase: str | None = None
    exit_code: int | None = None
    node: str | None = None
    started_at: str | None = None
    finished_at: str | None = None

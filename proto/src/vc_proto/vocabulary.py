"""Volcano's names, exactly as in its code: labels, annotations, phases, actions, events."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# Annotations and labels (volcano-semantics 1.5).
GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
GROUP_MIN_MEMBER_ANNOTATION: Final = "scheduling.volcano.sh/group-min-member"
JOB_NAME_KEY: Final = "volcano.sh/job-name"
JOB_NAMESPACE_KEY: Final = "volcano.sh/job-namespace"
TASK_SPEC_KEY: Final = "volcano.sh/task-spec"
TASK_INDEX_KEY: Final = "volcano.sh/task-index"
QUEUE_NAME_KEY: Final = "volcano.sh/queue-name"
JOB_VERSION_KEY: Final = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY: Final = "volcano.sh/job-retry-count"
TEMPLATE_UID_KEY: Final = "volcano.sh/template-uid"
JOB_TYPE_KEY: Final = "volcano.sh/job-type"
PREEMPTABLE_KEY: Final = "volcano.sh/preemptable"
OUT_OF_SYNC_KEY: Final = "volcano.sh/controller-out-of-sync"
TASK_PRIORITY_KEY: Final = "volcano.sh/task-priority"
SLA_WAITING_TIME_KEY: Final = "volcano.sh/sla-waiting-time"
CLOSED_BY_PARENT_KEY: Final = "volcano.sh/closed-by-parent"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
# Tephra's own objects (the job plugins' Secrets, ConfigMaps, Services, NetworkPolicies) carry this label:
# the kube relay mirrors only those of these kinds, and users may not write them (admission).
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY_TEPHRA: Final = "tephra"
# Tephra's simulated pods end by these (interfaces.md section 2).
SIM_DURATION_ANNOTATION: Final = "sim.tephra.dev/duration"
SIM_EXIT_CODE_ANNOTATION: Final = "sim.tephra.dev/exit-code"

DEFAULT_QUEUE: Final = "default"
ROOT_QUEUE: Final = "root"
DEFAULT_SCHEDULER_NAME: Final = "volcano"


class JobPhase(StrEnum):
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class PodGroupPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    INQUEUE = "Inqueue"
    COMPLETED = "Completed"


class PodGroupConditionType(StrEnum):
    """The PodGroup conditions the scheduler writes (Volcano's PodGroupConditionType)."""

    UNSCHEDULABLE = "Unschedulable"
    SCHEDULED = "Scheduled"


class QueueState(StrEnum):
    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class Action(StrEnum):
    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    RESTART_PARTITION = "RestartPartition"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    SYNC_JOB = "SyncJob"
    ENQUEUE_JOB = "EnqueueJob"
    SYNC_QUEUE = "SyncQueue"
    OPEN_QUEUE = "OpenQueue"
    CLOSE_QUEUE = "CloseQueue"


class Event(StrEnum):
    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    POD_RUNNING = "PodRunning"
    JOB_UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    OUT_OF_SYNC = "OutOfSync"
    COMMAND_ISSUED = "CommandIssued"
    JOB_UPDATED = "JobUpdated"
    TASK_FAILED = "TaskFailed"

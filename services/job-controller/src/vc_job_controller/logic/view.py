"""What `decide` reads: a job's world (JobView) and the request that woke it (Request).

Both are plain data filled by the shell from its caches. Helper functions here read Volcano's
defaults out of the frozen wire types (absent fields are None on the wire, zero in Go).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Final

import msgspec

from vc_proto.batch import Job, JobSpec, JobStatus, TaskSpec
from vc_proto.core import Pod
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import TASK_SPEC_KEY, JobPhase

DEFAULT_TASK_SPEC: Final = "default"
DEFAULT_MAX_RETRY: Final = 3


class DelayedAction(msgspec.Struct, frozen=True, kw_only=True):
    """A policy action waiting for its timeout (Volcano's delayAction), held by the shell.

    `key` is the pod name the action was raised for ("" for events without a pod), the key of Volcano's
    per-job delayActionMap. When the timer fires the shell replays it as `request_for_fired(delayed)`.
    """

    key: str
    action: str
    event: str = ""
    task_name: str = ""
    pod_name: str = ""
    pod_uid: str = ""
    partition_id: str = ""
    delay: timedelta
    due_at: str = ""


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """Volcano's apis.Request: why the job is being looked at.

    `action` is set for Commands and fired delayed actions (used directly, no policy lookup).
    `previous_phase` is the pod's phase before the change that raised the request ("" for a new pod),
    when the shell knows it; it lets `decide` report the pod's transition in the job's history.
    `pod` is the pod as last seen, for requests about a pod no longer in the view (deleted).
    """

    event: str = ""
    action: str = ""
    task_name: str = ""
    pod_name: str = ""
    pod_uid: str = ""
    partition_id: str = ""
    exit_code: int = 0
    job_version: int = 0
    job_uid: str = ""
    previous_phase: str | None = None
    pod: Pod | None = None
    # Set when replaying a fired delayed action: its key, so the plan removes it from the pending set.
    delayed_key: str | None = None


def request_for_fired(delayed: DelayedAction) -> Request:
    """The request to run when a delayed action's timer fires: its action, executed directly."""
    return Request(
        event=delayed.event,
        action=delayed.action,
        task_name=delayed.task_name,
        pod_name=delayed.pod_name,
        pod_uid=delayed.pod_uid,
        partition_id=delayed.partition_id,
        delayed_key=delayed.key,
    )


class JobView:
    """A job with its pods (by name), its PodGroup, pending delayed actions and PriorityClass values."""

    __slots__ = ("delayed", "job", "podgroup", "pods", "priority_classes")

    def __init__(
        self,
        job: Job,
        pods: Mapping[str, Pod],
        podgroup: PodGroup | None,
        *,
        delayed: Mapping[str, DelayedAction] | None = None,
        priority_classes: Mapping[str, int] | None = None,
    ) -> None:
        self.job = job
        self.pods = pods
        self.podgroup = podgroup
        self.delayed: Mapping[str, DelayedAction] = delayed or {}
        self.priority_classes: Mapping[str, int] = priority_classes or {}

    @property
    def name(self) -> str:
        return self.job.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.job.metadata.namespace or ""

    @property
    def uid(self) -> str:
        return self.job.metadata.uid or ""

    @property
    def spec(self) -> JobSpec:
        return self.job.spec or JobSpec()

    @property
    def status(self) -> JobStatus:
        return self.job.status or JobStatus()

    @property
    def phase(self) -> str:
        return phase_of(self.status)

    def pods_by_task(self) -> dict[str, dict[str, Pod]]:
        """Volcano's JobInfo.Pods: task name (pod annotation) -> pod name -> pod."""
        grouped: dict[str, dict[str, Pod]] = {}
        for name, pod in sorted(self.pods.items()):
            grouped.setdefault(task_of_pod(pod), {})[name] = pod
        return grouped


def phase_of(status: JobStatus) -> str:
    return (status.state.phase if status.state else None) or ""


def task_of_pod(pod: Pod) -> str:
    annotations = pod.metadata.annotations or {}
    return annotations.get(TASK_SPEC_KEY) or DEFAULT_TASK_SPEC


def tasks(spec: JobSpec) -> list[TaskSpec]:
    return list(spec.tasks or [])


def task_name(task: TaskSpec) -> str:
    return task.name or ""


def replicas(task: TaskSpec) -> int:
    return task.replicas or 0


def find_task(spec: JobSpec, name: str) -> TaskSpec | None:
    return next((t for t in tasks(spec) if task_name(t) == name), None)


def total_replicas(spec: JobSpec) -> int:
    """Volcano's TotalTasks."""
    return sum(replicas(t) for t in tasks(spec))


def total_task_min_available(spec: JobSpec) -> int:
    """Volcano's TotalTaskMinAvailable: task minAvailable, else replicas."""
    return sum(t.min_available if t.min_available is not None else replicas(t) for t in tasks(spec))


def job_min_available(spec: JobSpec) -> int:
    return spec.min_available or 0


def max_retry(spec: JobSpec) -> int:
    """spec.maxRetry; the webhook writes 3 when it is 0 or absent, so the core does too."""
    return spec.max_retry or DEFAULT_MAX_RETRY


def min_task_member(task: TaskSpec) -> int:
    """Volcano's getMinTaskMember."""
    if task.min_available is not None:
        return task.min_available
    policy = task.partition_policy
    if policy and policy.min_partitions and policy.partition_size:
        return policy.min_partitions * policy.partition_size
    return replicas(task)


def is_terminal(phase: str) -> bool:
    return phase in (JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED)


def is_deleting(job: Job) -> bool:
    return job.metadata.deletion_timestamp is not None


def pod_is_terminating(pod: Pod) -> bool:
    return pod.metadata.deletion_timestamp is not None


def pod_phase(pod: Pod) -> str:
    return (pod.status.phase if pod.status else None) or ""


__all__ = [
    "DEFAULT_TASK_SPEC",
    "DelayedAction",
    "JobView",
    "Request",
    "request_for_fired",
]

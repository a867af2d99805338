"""batch.volcano.sh/v1alpha1 Job: every Volcano field under its Volcano name."""

from __future__ import annotations

from typing import Final

from vc_proto.base import Raw, Wire
from vc_proto.core import PodTemplateSpec
from vc_proto.meta import ObjectMeta

BATCH_V1ALPHA1: Final = "batch.volcano.sh/v1alpha1"


class NetworkTopologySpec(Wire, frozen=True, kw_only=True):
    mode: str | None = None
    highest_tier_allowed: int | None = None
    highest_tier_name: str | None = None


class VolumeSpec(Wire, frozen=True, kw_only=True):
    mount_path: str | None = None
    volume_claim_name: str | None = None
    volume_claim: Raw | None = None


class LifecyclePolicy(Wire, frozen=True, kw_only=True):
    action: str | None = None
    event: str | None = None
    events: list[str] | None = None
    exit_code: int | None = None
    # A Go duration text such as "10m" or "1m30s" (metav1.Duration).
    timeout: str | None = None


class DependsOn(Wire, frozen=True, kw_only=True):
    name: list[str] | None = None
    iteration: str | None = None


class PartitionPolicySpec(Wire, frozen=True, kw_only=True):
    total_partitions: int | None = None
    partition_size: int | None = None
    network_topology: NetworkTopologySpec | None = None
    min_partitions: int | None = None


class TaskSpec(Wire, frozen=True, kw_only=True):
    name: str | None = None
    replicas: int | None = None
    min_available: int | None = None
    template: PodTemplateSpec | None = None
    policies: list[LifecyclePolicy] | None = None
    topology_policy: str | None = None
    max_retry: int | None = None
    depends_on: DependsOn | None = None
    partition_policy: PartitionPolicySpec | None = None


class JobSpec(Wire, frozen=True, kw_only=True):
    scheduler_name: str | None = None
    min_available: int | None = None
    volumes: list[VolumeSpec] | None = None
    tasks: list[TaskSpec] | None = None
    policies: list[LifecyclePolicy] | None = None
    plugins: dict[str, list[str]] | None = None
    running_estimate: str | None = None
    queue: str | None = None
    max_retry: int | None = None
    ttl_seconds_after_finished: int | None = None
    priority_class_name: str | None = None
    min_success: int | None = None
    network_topology: NetworkTopologySpec | None = None


class JobState(Wire, frozen=True, kw_only=True):
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class TaskState(Wire, frozen=True, kw_only=True):
    # Pod phase -> count of the task's pods in it.
    phase: dict[str, int] | None = None


class JobCondition(Wire, frozen=True, kw_only=True):
    """Volcano writes `status` (a JobPhase) and the time; Tephra also fills `reason` and `message`."""

    status: str | None = None
    last_transition_time: str | None = None
    reason: str | None = None
    message: str | None = None


class JobStatus(Wire, frozen=True, kw_only=True):
    state: JobState | None = None
    min_available: int | None = None
    task_status_count: dict[str, TaskState] | None = None
    pending: int | None = None
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    terminating: int | None = None
    unknown: int | None = None
    version: int | None = None
    retry_count: int | None = None
    running_duration: str | None = None
    controlled_resources: dict[str, str] | None = None
    conditions: list[JobCondition] | None = None


class Job(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Job"):
    api_version: str
    metadata: ObjectMeta
    spec: JobSpec | None = None
    status: JobStatus | None = None

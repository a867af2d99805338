"""flow.volcano.sh/v1alpha1 JobTemplate and JobFlow: every Volcano field under its Volcano name.

A JobTemplate's `spec` is a vcjob's JobSpec. A JobFlow lists flows by template name; the flow
controller creates one vcjob `<flow>-<template>` per flow once the flow's `dependsOn.targets` are
Completed. Volcano's spellings are kept as they are, `unKnowJobs` and `createTime` included.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from vc_proto.base import Wire
from vc_proto.batch import JobSpec, TaskState
from vc_proto.meta import ObjectMeta

FLOW_V1ALPHA1: Final = "flow.volcano.sh/v1alpha1"
# Labels and annotations Volcano puts on the vcjobs a flow creates; the value is `<namespace>.<name>`.
CREATED_BY_JOB_TEMPLATE: Final = "volcano.sh/createdByJobTemplate"
CREATED_BY_JOB_FLOW: Final = "volcano.sh/createdByJobFlow"


class RetainPolicy(StrEnum):
    RETAIN = "retain"
    DELETE = "delete"


class FlowPhase(StrEnum):
    SUCCEED = "Succeed"
    TERMINATING = "Terminating"
    FAILED = "Failed"
    RUNNING = "Running"
    PENDING = "Pending"


class HttpHeader(Wire, frozen=True, kw_only=True):
    name: str | None = None
    value: str | None = None


class HttpGet(Wire, frozen=True, kw_only=True):
    task_name: str | None = None
    path: str | None = None
    port: int | None = None
    http_header: HttpHeader | None = None


class TcpSocket(Wire, frozen=True, kw_only=True):
    task_name: str | None = None
    port: int | None = None


class ProbeTaskStatus(Wire, frozen=True, kw_only=True):
    """Volcano's flow `TaskStatus` (a task name and a phase), renamed to keep it apart from a job's."""

    task_name: str | None = None
    phase: str | None = None


class Probe(Wire, frozen=True, kw_only=True):
    http_get_list: list[HttpGet] | None = None
    tcp_socket_list: list[TcpSocket] | None = None
    task_status_list: list[ProbeTaskStatus] | None = None


class FlowDependsOn(Wire, frozen=True, kw_only=True):
    targets: list[str] | None = None
    probe: Probe | None = None


class FlowPatch(Wire, frozen=True, kw_only=True):
    job_spec: JobSpec | None = None


class Flow(Wire, frozen=True, kw_only=True):
    name: str | None = None
    depends_on: FlowDependsOn | None = None
    patch: FlowPatch | None = None


class JobFlowSpec(Wire, frozen=True, kw_only=True):
    flows: list[Flow] | None = None
    job_retain_policy: str | None = None


class JobRunningHistory(Wire, frozen=True, kw_only=True):
    start_timestamp: str | None = None
    end_timestamp: str | None = None
    state: str | None = None


class FlowJobStatus(Wire, frozen=True, kw_only=True):
    """One vcjob of the flow in `status.jobStatusList` (Volcano's flow `JobStatus`)."""

    name: str | None = None
    state: str | None = None
    start_timestamp: str | None = None
    end_timestamp: str | None = None
    restart_count: int | None = None
    running_histories: list[JobRunningHistory] | None = None


class FlowCondition(Wire, frozen=True, kw_only=True):
    phase: str | None = None
    create_time: str | None = None
    running_duration: str | None = None
    task_status_count: dict[str, TaskState] | None = None


class FlowState(Wire, frozen=True, kw_only=True):
    phase: str | None = None


class JobFlowStatus(Wire, frozen=True, kw_only=True):
    pending_jobs: list[str] | None = None
    running_jobs: list[str] | None = None
    failed_jobs: list[str] | None = None
    completed_jobs: list[str] | None = None
    terminated_jobs: list[str] | None = None
    un_know_jobs: list[str] | None = None
    job_status_list: list[FlowJobStatus] | None = None
    conditions: dict[str, FlowCondition] | None = None
    state: FlowState | None = None


class JobFlow(Wire, frozen=True, kw_only=True, tag_field="kind", tag="JobFlow"):
    api_version: str
    metadata: ObjectMeta
    spec: JobFlowSpec | None = None
    status: JobFlowStatus | None = None


class JobTemplateStatus(Wire, frozen=True, kw_only=True):
    job_depends_on_list: list[str] | None = None


class JobTemplate(Wire, frozen=True, kw_only=True, tag_field="kind", tag="JobTemplate"):
    api_version: str
    metadata: ObjectMeta
    spec: JobSpec | None = None
    status: JobTemplateStatus | None = None

"""Builders for job-controller unit tests: jobs, pods, PodGroups and views, as plain data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import yaml
from msgspec.structs import replace

from vc_job_controller.logic import JobView, Request
from vc_job_controller.logic.decision import decide
from vc_job_controller.logic.plan import Plan
from vc_job_controller.plugins import PluginDeps, SshKeyPair
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, JobState, JobStatus, LifecyclePolicy, TaskSpec
from vc_proto.codec import from_dict
from vc_proto.core import (
    CORE_V1,
    Container,
    ContainerState,
    ContainerStateTerminated,
    ContainerStatus,
    Pod,
    PodSpec,
    PodStatus,
    PodTemplateSpec,
    ResourceRequirements,
)
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupStatus
from vc_proto.vocabulary import JOB_VERSION_KEY, OUT_OF_SYNC_KEY, TASK_SPEC_KEY

SEEDS = Path(__file__).resolve().parents[2] / "fixtures" / "seeds"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CREATED = "2026-01-02T03:00:00Z"
UID = "9c571015-37c7-4a1a-9604-eaa2248613f2"
FAKE_KEYS = SshKeyPair(
    private_key_pem=b"-----BEGIN RSA PRIVATE KEY-----\nfake\n-----END RSA PRIVATE KEY-----\n",
    public_key=b"ssh-rsa AAAAfake tephra\n",
)
DEPS = PluginDeps(ssh_keygen=lambda: FAKE_KEYS)


def load_seed(name: str, *, uid: str = UID, namespace: str = "default") -> Job:
    data: dict[str, Any] = yaml.safe_load((SEEDS / name).read_text())
    job = from_dict(data)
    assert isinstance(job, Job)
    meta = replace(job.metadata, uid=uid, namespace=namespace, creation_timestamp=CREATED)
    return replace(job, metadata=meta)


def task(
    name: str,
    replicas: int,
    *,
    min_available: int | None = None,
    cpu: str = "1",
    policies: list[LifecyclePolicy] | None = None,
    **extra: Any,
) -> TaskSpec:
    container = Container(
        name=name, image="busybox", resources=ResourceRequirements(requests={"cpu": cpu}, limits={"cpu": cpu})
    )
    template = PodTemplateSpec(spec=PodSpec(containers=[container], restart_policy="Never"))
    return TaskSpec(
        name=name, replicas=replicas, min_available=min_available, template=template, policies=policies, **extra
    )


def job(
    tasks: Iterable[TaskSpec],
    *,
    name: str = "job",
    phase: str | None = None,
    min_available: int | None = None,
    version: int = 0,
    retry_count: int = 0,
    max_retry: int = 3,
    policies: list[LifecyclePolicy] | None = None,
    plugins: dict[str, list[str]] | None = None,
    status: JobStatus | None = None,
    **spec_extra: Any,
) -> Job:
    task_list = list(tasks)
    total_min = sum(t.min_available if t.min_available is not None else t.replicas or 0 for t in task_list)
    spec = JobSpec(
        tasks=task_list,
        min_available=total_min if min_available is None else min_available,
        queue="default",
        scheduler_name="volcano",
        max_retry=max_retry,
        policies=policies,
        plugins=plugins,
        **spec_extra,
    )
    if status is None and phase is not None:
        status = JobStatus(
            state=JobState(phase=phase, last_transition_time=CREATED),
            version=version,
            retry_count=retry_count,
            min_available=spec.min_available,
        )
    meta = ObjectMeta(name=name, namespace="ns", uid=UID, creation_timestamp=CREATED)
    return Job(api_version=BATCH_V1ALPHA1, metadata=meta, spec=spec, status=status)


def with_status(j: Job, **changes: Any) -> Job:
    return replace(j, status=replace(j.status or JobStatus(), **changes))


def pod(
    j: Job,
    task_name: str,
    index: int,
    phase: str = "Running",
    *,
    version: int = 0,
    terminating: bool = False,
    out_of_sync: bool = False,
    ready: bool = True,
    exit_code: int | None = None,
    node: str | None = "node-1",
) -> Pod:
    name = f"{j.metadata.name}-{task_name}-{index}"
    annotations = {TASK_SPEC_KEY: task_name, JOB_VERSION_KEY: str(version)}
    if out_of_sync:
        annotations[OUT_OF_SYNC_KEY] = "true"
    meta = ObjectMeta(
        name=name,
        namespace="ns",
        uid=f"uid-{name}",
        annotations=annotations,
        labels={"volcano.sh/task-spec": task_name},
        deletion_timestamp="2026-01-02T03:04:00Z" if terminating else None,
    )
    state = ContainerState(terminated=ContainerStateTerminated(exit_code=exit_code)) if exit_code is not None else None
    statuses = [ContainerStatus(name=task_name, ready=ready, state=state)]
    status = PodStatus(phase=phase, container_statuses=statuses, start_time="2026-01-02T03:01:00Z")
    return Pod(api_version=CORE_V1, metadata=meta, spec=PodSpec(node_name=node), status=status)


def pods(*items: Pod) -> dict[str, Pod]:
    return {p.metadata.name or "": p for p in items}


def podgroup(j: Job, phase: str | None = "Inqueue") -> PodGroup:
    name = f"{j.metadata.name}-{j.metadata.uid}"
    meta = ObjectMeta(name=name, namespace=j.metadata.namespace)
    return PodGroup(api_version=SCHEDULING_V1BETA1, metadata=meta, status=PodGroupStatus(phase=phase))


def view(j: Job, pod_map: Mapping[str, Pod] | None = None, pg: PodGroup | str | None = "Inqueue", **kw: Any) -> JobView:
    group = podgroup(j, pg) if isinstance(pg, str) else pg
    return JobView(j, dict(pod_map or {}), group, **kw)


def run(v: JobView, request: Request | None = None, **kw: Any) -> Plan:
    return decide(v, request or Request(), NOW, deps=DEPS, **kw)


def phase_after(plan: Plan, before: Job) -> str:
    status = plan.status or before.status or JobStatus()
    return (status.state.phase if status.state else None) or ""


def to_builtins(obj: object) -> Any:
    return msgspec.to_builtins(obj)


def spec_of(j: Job) -> JobSpec:
    assert j.spec is not None
    return j.spec


def tasks_of(j: Job) -> list[TaskSpec]:
    return list(spec_of(j).tasks or [])


def with_spec(j: Job, **changes: Any) -> Job:
    return replace(j, spec=replace(spec_of(j), **changes))


def pod_spec_of(t: TaskSpec) -> PodSpec:
    assert t.template is not None and t.template.spec is not None
    return t.template.spec


def with_pod_spec(t: TaskSpec, **changes: Any) -> TaskSpec:
    assert t.template is not None
    return replace(t, template=replace(t.template, spec=replace(pod_spec_of(t), **changes)))


def with_phase(j: Job, phase: str) -> Job:
    status = j.status or JobStatus()
    return replace(j, status=replace(status, state=replace(status.state or JobState(), phase=phase)))

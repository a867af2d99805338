"""Objects for the dashboard's tests, written as users and services write them (Kubernetes JSON)."""

from __future__ import annotations

from typing import Any

import msgspec

from vc_proto.batch import Job
from vc_proto.core import Node, Pod
from vc_proto.events import DomainEvent
from vc_proto.scheduling import PodGroup, Queue


def queue(name: str, *, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> Queue:
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": spec or {"weight": 1},
        "status": status or {"state": "Open"},
    }
    return msgspec.convert(doc, Queue)


def job(
    name: str,
    *,
    namespace: str = "default",
    queue_name: str = "default",
    phase: str | None = None,
    tasks: dict[str, int] | None = None,
    counts: dict[str, dict[str, int]] | None = None,
    created: str = "2026-01-01T00:00:00Z",
    uid: str | None = None,
) -> Job:
    spec = {
        "queue": queue_name,
        "minAvailable": sum((tasks or {"w": 1}).values()),
        "tasks": [
            {"name": t, "replicas": n, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
            for t, n in (tasks or {"w": 1}).items()
        ],
    }
    status: dict[str, Any] = {}
    if phase:
        status["state"] = {"phase": phase}
    if counts:
        status["taskStatusCount"] = {t: {"phase": c} for t, c in counts.items()}
    doc = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "creationTimestamp": created,
            "resourceVersion": "1",
        },
        "spec": spec,
        "status": status,
    }
    return msgspec.convert(doc, Job)


def podgroup(
    job_name: str, *, namespace: str = "default", phase: str = "Pending", conditions: list[dict[str, Any]] | None = None
) -> PodGroup:
    doc = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"{job_name}-pg",
            "namespace": namespace,
            "resourceVersion": "1",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": job_name,
                    "uid": f"uid-{job_name}",
                    "controller": True,
                }
            ],
        },
        "spec": {"minMember": 1},
        "status": {"phase": phase, "conditions": conditions or []},
    }
    return msgspec.convert(doc, PodGroup)


def unschedulable(message: str, *, at: str = "2026-01-01T00:00:05Z") -> dict[str, Any]:
    return {
        "type": "Unschedulable",
        "status": "True",
        "reason": "NotEnoughResources",
        "message": message,
        "lastTransitionTime": at,
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str | None = None,
    phase: str = "Pending",
    requests: dict[str, str] | None = None,
    job_name: str | None = None,
    init_requests: dict[str, str] | None = None,
    overhead: dict[str, str] | None = None,
    resource_version: str = "1",
) -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests or {}}}]}
    if node:
        spec["nodeName"] = node
    if init_requests:
        spec["initContainers"] = [{"name": "i", "image": "x", "resources": {"requests": init_requests}}]
    if overhead:
        spec["overhead"] = overhead
    labels = {"volcano.sh/job-name": job_name} if job_name else {}
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "resourceVersion": resource_version},
        "spec": spec,
        "status": {"phase": phase},
    }
    return msgspec.convert(doc, Pod)


def node(
    name: str, *, cpu: str = "32", memory: str = "256Gi", gpu: str = "8", pods: str = "110", ready: bool = True
) -> Node:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": "1"},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpu, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    return msgspec.convert(doc, Node)


def event(
    kind: str,
    name: str,
    reason: str,
    at: str,
    *,
    phase: str | None = None,
    task: str | None = None,
    exit_code: int | None = None,
    message: str | None = None,
    job_name: str = "j",
) -> DomainEvent:
    return DomainEvent(
        id=f"{kind}-{name}-{reason}-{at}",
        occurred_at=at,
        source="test",
        kind=kind,
        namespace="default",
        name=name,
        reason=reason,
        phase=phase,
        task=task,
        exit_code=exit_code,
        message=message,
        job=job_name,
    )

"""Builders for admission tests: small, valid-by-default objects (Volcano's test fixtures, in Python)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vc_proto.base import ResourceList
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, LifecyclePolicy, TaskSpec
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, PodTemplateSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import (
    SCHEDULING_V1BETA1,
    Guarantee,
    PodGroup,
    PodGroupSpec,
    Queue,
    QueueSpec,
    QueueStatus,
)
from vc_validation import StaticContext, Verdict, Violation


def container(
    name: str = "fake-name", *, requests: ResourceList | None = None, limits: ResourceList | None = None
) -> Container:
    resources = ResourceRequirements(requests=requests, limits=limits) if requests or limits else None
    return Container(name=name, image="busybox:1.24", resources=resources)


def template(
    *containers: Container, host_network: bool | None = None, dns_policy: str | None = None
) -> PodTemplateSpec:
    return PodTemplateSpec(
        spec=PodSpec(containers=list(containers) or [container()], host_network=host_network, dns_policy=dns_policy)
    )


def task(name: str | None = "task-1", replicas: int | None = 1, **fields: Any) -> TaskSpec:
    fields.setdefault("template", template())
    return TaskSpec(name=name, replicas=replicas, **fields)


def job(
    name: str = "valid-job",
    *tasks: TaskSpec,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Job:
    spec.setdefault("queue", "default")
    spec.setdefault("tasks", list(tasks) if tasks else [task()])
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(name=name, namespace=namespace, labels=labels, annotations=annotations),
        spec=JobSpec(**spec),
    )


def policy(action: str = "RestartJob", **fields: Any) -> LifecyclePolicy:
    return LifecyclePolicy(action=action, **fields)


def queue(
    name: str,
    *,
    parent: str | None = None,
    state: str | None = "Open",
    weight: int | None = 1,
    capability: ResourceList | None = None,
    deserved: ResourceList | None = None,
    guarantee: ResourceList | None = None,
    allowed: list[str] | None = None,
    annotations: dict[str, str] | None = None,
    reclaimable: bool | None = True,
) -> Queue:
    return Queue(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, annotations=annotations),
        spec=QueueSpec(
            weight=weight,
            parent=parent,
            capability=capability,
            deserved=deserved,
            guarantee=Guarantee(resource=guarantee) if guarantee is not None else None,
            allowed_namespaces=allowed,
            reclaimable=reclaimable,
        ),
        status=QueueStatus(state=state) if state is not None else None,
    )


def podgroup(name: str = "test-podgroup", *, namespace: str = "default", **spec: Any) -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name=name, namespace=namespace), spec=PodGroupSpec(**spec)
    )


def pod(name: str = "p-0", *, scheduler_name: str | None = "volcano", annotations: dict[str, str] | None = None) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace="default", annotations=annotations),
        spec=PodSpec(containers=[container()], scheduler_name=scheduler_name),
    )


def context(
    *queues: Queue,
    busy: Iterable[str] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
    max_depth: int = 5,
    with_defaults: bool = True,
) -> StaticContext:
    """A context with `root` and `default` (as the scheduler creates them) plus `queues`."""
    known = {"root": queue("root", reclaimable=False), "default": queue("default")} if with_defaults else {}
    known.update({q.metadata.name or "": q for q in queues})
    busy_set = frozenset(busy)
    return StaticContext(
        queues=known, workloads=busy_set.__contains__, namespaces=namespaces or {}, max_queue_depth=max_depth
    )


def only(verdict: Verdict | list[Violation], rule: str) -> Violation:
    """The violation with `rule`; fails listing what was found otherwise."""
    found = verdict.violations if isinstance(verdict, Verdict) else tuple(verdict)
    matching = [v for v in found if v.rule == rule]
    assert matching, f"no {rule!r} violation in {found}"
    return matching[0]


def rules(verdict: Verdict | list[Violation]) -> set[str]:
    found = verdict.violations if isinstance(verdict, Verdict) else tuple(verdict)
    return {v.rule for v in found}

"""What the job controller keeps of each pod in its cache: the fields it reads, nothing more. Pure.

A cached pod is still a `Pod` (the logic reads it as one), with only what the controller acts on:
its identity, owner, labels and annotations, deletion mark, node, and the status it counts and records
(phase, reason, message, start time, and each container's restarts and terminated state). The spec's
containers, the status' conditions and the rest are left out, and the text gangs repeat is shared
(vc_core.interning). The controller never writes a cached pod back: it reads the stored pod first
(executor.py), so what is left out here is never lost from the store.
"""

from __future__ import annotations

import msgspec

from vc_core.interning import SharedParts, shared, shared_or_none, shared_strings
from vc_proto.core import ContainerState, ContainerStateTerminated, ContainerStatus, Pod, PodSpec, PodStatus
from vc_proto.meta import ObjectMeta, OwnerReference

# Equal parts are one object (these are frozen, and nothing changes a cached pod): pods on one node
# share their spec (all the cache keeps of it is the node's name), a gang's pods their owner, and pods
# that started in the same second their status.
_SPECS: SharedParts[str | None, PodSpec] = SharedParts()
_OWNERS: SharedParts[tuple[object, ...], list[OwnerReference]] = SharedParts()
_STATUSES: SharedParts[tuple[object, ...], PodStatus] = SharedParts()


def cached_pod(pod: Pod) -> Pod:
    return Pod(
        api_version=shared(pod.api_version),
        metadata=_metadata(pod.metadata),
        spec=_spec(pod.spec.node_name if pod.spec else None),
        status=_status(pod.status) if pod.status else None,
    )


def _metadata(meta: ObjectMeta) -> ObjectMeta:
    return ObjectMeta(
        name=meta.name,
        namespace=shared_or_none(meta.namespace),
        uid=meta.uid,
        resource_version=meta.resource_version,
        deletion_timestamp=meta.deletion_timestamp,
        labels=None if meta.labels is None else shared_strings(meta.labels),
        annotations=None if meta.annotations is None else shared_strings(meta.annotations),
        owner_references=None if meta.owner_references is None else _owners(meta.owner_references),
        finalizers=meta.finalizers,
    )


def _owners(refs: list[OwnerReference]) -> list[OwnerReference]:
    key = tuple(msgspec.structs.astuple(ref) for ref in refs)
    return _OWNERS.one(key, lambda: [_owner(ref) for ref in refs])


def _owner(ref: OwnerReference) -> OwnerReference:
    return OwnerReference(
        api_version=shared(ref.api_version),
        kind=shared(ref.kind),
        name=shared(ref.name),
        uid=shared(ref.uid),
        controller=ref.controller,
        block_owner_deletion=ref.block_owner_deletion,
    )


def _spec(node_name: str | None) -> PodSpec:
    return _SPECS.one(node_name, lambda: PodSpec(node_name=shared_or_none(node_name)))


def _status(status: PodStatus) -> PodStatus:
    containers = _containers(status.container_statuses)
    init_containers = _containers(status.init_container_statuses)
    key = (status.phase, status.reason, status.message, status.start_time, containers, init_containers)
    return _STATUSES.one(
        key,
        lambda: PodStatus(
            phase=shared_or_none(status.phase),
            reason=status.reason,
            message=status.message,
            start_time=shared_or_none(status.start_time),
            container_statuses=None if containers is None else [_container(*c) for c in containers],
            init_container_statuses=None if init_containers is None else [_container(*c) for c in init_containers],
        ),
    )


# What is kept of a container's status: name, ready, restarts, started, terminated state.
_Container = tuple[str, bool, int, "bool | None", "ContainerStateTerminated | None"]


def _containers(statuses: list[ContainerStatus] | None) -> tuple[_Container, ...] | None:
    if statuses is None:
        return None
    return tuple(
        (s.name, s.ready, s.restart_count, s.started, s.state.terminated if s.state else None) for s in statuses
    )


def _container(
    name: str, ready: bool, restart_count: int, started: bool | None, terminated: ContainerStateTerminated | None
) -> ContainerStatus:
    return ContainerStatus(
        name=shared(name),
        ready=ready,
        restart_count=restart_count,
        started=started,
        state=ContainerState(terminated=terminated) if terminated else None,
    )

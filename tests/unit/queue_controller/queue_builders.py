"""Small builders for queue-controller unit tests."""

from __future__ import annotations

from vc_proto.base import ResourceList
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import (
    SCHEDULING_V1BETA1,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    Queue,
    QueueSpec,
    QueueStatus,
)


def queue(
    name: str, state: str | None = "Open", *, parent: str | None = "root", annotations: dict[str, str] | None = None
) -> Queue:
    return Queue(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, annotations=annotations, resource_version="1"),
        spec=QueueSpec(weight=1, parent=parent),
        status=QueueStatus(state=state) if state is not None else None,
    )


def podgroup(
    name: str, phase: str | None, *, queue: str | None = "q", min_resources: ResourceList | None = None
) -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, namespace="ns"),
        spec=PodGroupSpec(min_member=1, queue=queue, min_resources=min_resources),
        status=PodGroupStatus(phase=phase) if phase is not None else None,
    )

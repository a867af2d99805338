"""A cluster with nothing placed yet, written straight to the store: Ready nodes and gangs of pending pods,
as the controllers and node-sim would have left them before a scheduler runs.

Each gang is a PodGroup in the default queue, phase Pending (as the podgroup-controller creates it: the
scheduler's enqueue moves it to Inqueue), and its pods, which name it in `scheduling.k8s.io/group-name`
and ask for the `volcano` scheduler. The objects are written concurrently, a bounded number in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from vc_bus.store import NatsStore
from vc_proto.core import (
    CORE_V1,
    Container,
    Node,
    NodeCondition,
    NodeStatus,
    Pod,
    PodSpec,
    PodStatus,
    ResourceRequirements,
)
from vc_proto.kinds import KubeObject
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec, PodGroupStatus
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION, HOSTNAME_LABEL, PodGroupPhase

NAMESPACE = "bench"
# Room for every pod many times over: 100,000 pods of 250m on 10,000 nodes use 2.5 of a node's 32 CPUs.
NODE_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "110"}
POD_REQUESTS = {"cpu": "250m", "memory": "256Mi"}


@dataclass(frozen=True, slots=True)
class Shape:
    nodes: int
    pods: int
    gang: int = 10

    @property
    def gangs(self) -> int:
        return self.pods // self.gang


def node(name: str) -> Node:
    ready = NodeCondition(type="Ready", status="True", reason="KubeletReady")
    return Node(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, labels={HOSTNAME_LABEL: name}),
        status=NodeStatus(
            capacity=dict(NODE_CAPACITY), allocatable=dict(NODE_CAPACITY), phase="Running", conditions=[ready]
        ),
    )


def podgroup(name: str, members: int) -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, namespace=NAMESPACE),
        spec=PodGroupSpec(min_member=members, queue="default"),
        status=PodGroupStatus(phase=PodGroupPhase.PENDING.value),
    )


def member(group: str, index: int) -> Pod:
    container = Container(name="main", image="busybox", resources=ResourceRequirements(requests=dict(POD_REQUESTS)))
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=f"{group}-{index}", namespace=NAMESPACE, annotations={GROUP_NAME_ANNOTATION: group}),
        spec=PodSpec(scheduler_name="volcano", restart_policy="Never", containers=[container]),
        status=PodStatus(phase="Pending"),
    )


def objects(shape: Shape) -> Iterator[KubeObject]:
    """The nodes, then each gang's PodGroup before its pods."""
    for i in range(shape.nodes):
        yield node(f"node-{i:05d}")
    for g in range(shape.gangs):
        group = f"g{g:06d}"
        yield podgroup(group, shape.gang)
        for i in range(shape.gang):
            yield member(group, i)


def count(shape: Shape) -> int:
    return shape.nodes + shape.gangs * (1 + shape.gang)


async def write_all(
    store: NatsStore, shape: Shape, *, in_flight: int = 256, written: Callable[[int], None] | None = None
) -> int:
    """Every object of `shape` created in the store, at most `in_flight` writes outstanding; `written` is
    told the running count. Returns the count."""
    done = 0
    pending: set[asyncio.Task[KubeObject]] = set()

    def finished(_: asyncio.Task[KubeObject]) -> None:
        nonlocal done
        done += 1
        if written is not None:
            written(done)

    for obj in objects(shape):
        if len(pending) >= in_flight:
            complete, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in complete:
                task.result()  # a failed write ends the run, with its error
        task = asyncio.create_task(store.create(obj))
        task.add_done_callback(finished)
        pending.add(task)
    for task in pending:
        await task
    return done

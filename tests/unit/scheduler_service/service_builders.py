"""Snapshot views for the scheduler-service tests (the core's own types, built directly)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from fractions import Fraction

from vc_proto.pod_shards import SHARDS
from vc_runtime.sharding import SoleOwner
from vc_sched_core.cycle import load_scheduler_conf
from vc_sched_core.snapshot.cluster import NodeObj, PodGroupObj, PodObj
from vc_scheduler.binder import GangBinder
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.evictor import Evictor
from vc_scheduler.inflight import InFlight
from vc_scheduler.loop import SchedulingLoop
from vc_scheduler.shard_records import ShardTally
from vc_scheduler.share import Partition
from vc_scheduler.status_writer import StatusWriter


def pod(name: str, group: str, *, node: str = "", phase: str = "Pending") -> PodObj:
    return PodObj(
        name=name,
        namespace="ns",
        uid=f"uid-{name}",
        labels={},
        annotations={"scheduling.k8s.io/group-name": group},
        scheduler_name="volcano",
        node_name=node,
        priority=None,
        priority_class_name="",
        preemption_policy="",
        node_selector={},
        affinity=None,
        tolerations=(),
        requests={"cpu": Fraction(1)},
        phase=phase,
        deleting=False,
    )


def group(name: str, queue: str = "default", *, min_member: int = 1) -> PodGroupObj:
    return PodGroupObj(
        name=name,
        namespace="ns",
        labels={},
        annotations={},
        min_member=min_member,
        min_task_member={},
        min_resources=None,
        queue=queue,
        priority_class_name="",
        phase="Inqueue",
    )


def node(name: str) -> NodeObj:
    return NodeObj(name=name, labels={}, taints=(), unschedulable=False, allocatable={"cpu": Fraction(4)}, max_pods=10)


def offline_loop(
    cache: SchedulerCache,
    *,
    period_s: float = 1.0,
    owner: SoleOwner | None = None,
    members: SoleOwner | None = None,
    work: InFlight | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    binds_per_cycle: int | None = None,
) -> SchedulingLoop:
    """A scheduling loop over `cache` with no store (its binder, evictor and status writer hold None: the
    tests drive `run_once` or watch the loop's decisions, never a write)."""
    owner = owner or SoleOwner("s0")
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    work = work or InFlight("s0")
    return SchedulingLoop(
        cache,
        load_scheduler_conf(),
        binder=GangBinder(None, cache, events, ownership=owner, work=work),  # type: ignore[arg-type]
        evictor=Evictor(None, events, ownership=owner, work=work),  # type: ignore[arg-type]
        statuses=StatusWriter(None, cache, events, ownership=owner, work=work, clock=clock),  # type: ignore[arg-type]
        period_s=period_s,
        instance="s0",
        binds_per_cycle=binds_per_cycle,
        work=work,
        **({"members": members} if members is not None else {}),
        clock=clock,
        sleep=sleep,
    )


def publish_others(index: ClusterIndex, partition: Partition) -> None:
    """Hand `index` the records the other instances would publish of their shards, worked out from what
    it holds (every pod, in these tests)."""
    tally = ShardTally()
    for member in partition.members:
        if member != partition.instance:
            theirs_of = Partition(member, partition.members)
            index.count_shards(tally, theirs_of.shards, theirs_of.owns_node)
    theirs = frozenset(range(SHARDS)) - partition.shards
    for shard in theirs:
        tally.rewrite(shard, index.others.stored(shard))
    for key, value in tally.flush(1, theirs):
        assert index.others.apply(key, value)


class FixedPods:
    """peers.PodsStream at a fixed revision, always followed (the tests feed the index themselves)."""

    def __init__(self, revision: int = 7) -> None:
        self.revision = revision
        self.covered: frozenset[int] | None = None

    def cover(self, shards: frozenset[int]) -> None:
        self.covered = shards

    def synced(self) -> bool:
        return True

    def followed_revision(self) -> int:
        return self.revision

    async def last_revision(self) -> int:
        return self.revision

    async def followed(self, revision: int, timeout_s: float) -> bool:
        return True

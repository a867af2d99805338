"""The gc shell over the in-memory store, with a controllable wall clock: nothing is deleted before
its deadline, a stale cache never deletes a successor, dependents follow their owner."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import msgspec
import structlog

from vc_bus.testing import MemoryStore
from vc_core.errors import NotFound
from vc_gc.caches import GcCaches
from vc_gc.collector import Collector
from vc_gc.logic.owners import OwnerKey
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, JobState, JobStatus
from vc_proto.core import CORE_V1, ConfigMap, Pod, PodStatus
from vc_proto.events import DomainEvent
from vc_proto.kinds import KubeObject
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_runtime.sharding import FencedStore, SoleOwner

T0 = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
JOB_KEY: OwnerKey = ("Job", "ns", "j")


@dataclass
class Rig:
    store: MemoryStore
    caches: GcCaches
    collector: Collector
    now: list[datetime]
    armed: list[tuple[OwnerKey, float]] = field(default_factory=list)
    events: list[DomainEvent] = field(default_factory=list)

    async def settle(self) -> None:
        await asyncio.sleep(0.01)  # let the informers take in the store's changes


@asynccontextmanager
async def rig(*, now: datetime) -> AsyncIterator[Rig]:
    store = MemoryStore()
    clock = [now]
    caches = GcCaches(store, submit=lambda key: None)
    armed: list[tuple[OwnerKey, float]] = []
    events: list[DomainEvent] = []

    async def publish(event: DomainEvent) -> None:
        events.append(event)

    collector = Collector(
        caches=caches,
        writer=FencedStore(store, SoleOwner()),
        ownership=SoleOwner(),
        arm=lambda key, delay: armed.append((key, delay)),
        publish=publish,
        clock=lambda: clock[0],
    )
    r = Rig(store, caches, collector, clock, armed, events)
    shutdown = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        for informer in caches.informers:
            tg.create_task(informer.run(shutdown))
        await r.settle()
        try:
            yield r
        finally:
            shutdown.set()


def job(*, phase: str = "Completed", finished: datetime = T0, ttl: int = 10) -> Job:
    stamp = finished.strftime("%Y-%m-%dT%H:%M:%SZ")
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(name="j", namespace="ns"),
        spec=JobSpec(ttl_seconds_after_finished=ttl),
        status=JobStatus(state=JobState(phase=phase, last_transition_time=stamp)),
    )


def owned(owner: Job, obj: KubeObject) -> KubeObject:
    uid = owner.metadata.uid or ""
    ref = OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name="j", uid=uid, controller=True)
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, owner_references=[ref]))


def meta(name: str) -> ObjectMeta:
    return ObjectMeta(name=name, namespace="ns")


async def present(store: MemoryStore, kind: type[KubeObject], name: str) -> bool:
    try:
        await store.get(kind, "ns", name)
    except NotFound:
        return False
    return True


async def test_not_deleted_before_deadline_then_deleted_with_dependents() -> None:
    async with rig(now=T0 + timedelta(seconds=4)) as r:
        stored = await r.store.create(job())
        finished_pod = Pod(api_version=CORE_V1, metadata=meta("p"), status=PodStatus(phase="Succeeded"))
        await r.store.create(owned(stored, finished_pod))
        await r.store.create(owned(stored, ConfigMap(api_version=CORE_V1, metadata=meta("c"))))
        await r.settle()
        await r.collector.handle(JOB_KEY)
        assert await present(r.store, Job, "j")
        assert r.armed and r.armed[-1][0] == JOB_KEY and 6.0 <= r.armed[-1][1] < 6.5
        r.now[0] = T0 + timedelta(seconds=10)
        await r.collector.handle(JOB_KEY)
        assert not await present(r.store, Job, "j")
        await r.settle()
        await r.collector.handle(JOB_KEY)  # the job's DELETE brings this pass: its dependents are orphans
        assert not await present(r.store, Pod, "p") and not await present(r.store, ConfigMap, "c")
        assert [e.reason for e in r.events] == ["GarbageCollected"]


async def test_clock_step_back_defers_the_deletion() -> None:
    async with rig(now=T0 + timedelta(seconds=11)) as r:
        await r.store.create(job())
        await r.settle()
        r.now[0] = T0 + timedelta(seconds=2)  # the wall clock stepped back before the timer fired
        await r.collector.handle(JOB_KEY)
        assert await present(r.store, Job, "j")
        assert r.armed[-1][1] >= 8.0


async def test_future_finish_time_is_deferred_and_warned_once() -> None:
    async with rig(now=T0) as r:
        await r.store.create(job(finished=T0 + timedelta(seconds=30), ttl=0))
        await r.settle()
        with structlog.testing.capture_logs() as logs:
            await r.collector.handle(JOB_KEY)
            await r.collector.handle(JOB_KEY)
        assert await present(r.store, Job, "j")
        assert [entry["event"] for entry in logs].count("job.finished_in_future") == 1
        assert r.armed[-1][1] >= 30.0


async def test_stale_cache_never_deletes_a_successor() -> None:
    async with rig(now=T0 + timedelta(hours=1)) as r:
        old = await r.store.create(job())
        await r.settle()
        # Replace it behind the cache's back: same name, new uid, still running.
        await r.store.delete(Job, "ns", "j")
        await r.store.create(job(phase="Running"))
        await r.collector.handle(JOB_KEY)
        successor = await r.store.get(Job, "ns", "j")
        assert successor.metadata.uid != old.metadata.uid


async def test_nothing_happens_before_every_cache_synced() -> None:
    store = MemoryStore()
    await store.create(job())
    caches = GcCaches(store, submit=lambda key: None)

    async def publish(event: DomainEvent) -> None:
        raise AssertionError("nothing may be deleted")

    collector = Collector(
        caches=caches,
        writer=FencedStore(store, SoleOwner()),
        ownership=SoleOwner(),
        arm=lambda key, delay: None,
        publish=publish,
        clock=lambda: T0 + timedelta(days=1),
    )
    await collector.handle(JOB_KEY)
    assert await present(store, Job, "j")

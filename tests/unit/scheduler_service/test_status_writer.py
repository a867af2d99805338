"""Status writes: the scheduler writes on its cached copy, and on its own last write while the watch
has not delivered it yet (writing on the older cached copy would only lose the compare-and-set); the
statuses of one PodGroup offered while its write waits make one write, of the newest."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

import pytest

from tests.unit.scheduler_service.service_builders import group
from vc_bus.testing import MemoryStore
from vc_core.errors import Conflict
from vc_proto import codec
from vc_proto.core import Pod
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec
from vc_runtime.sharding import SoleOwner
from vc_sched_core.framework.decisions import PodGroupStatusUpdate
from vc_sched_core.snapshot.cluster import PodGroupCondition
from vc_scheduler.cache import SchedulerCache, stored_object
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.inflight import InFlight
from vc_scheduler.status_writer import StatusWriter


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = self.conflicts = self.updates = 0

    async def get(self, kind, namespace, name):  # type: ignore[no-untyped-def]
        self.reads += 1
        return await super().get(kind, namespace, name)

    async def update(self, obj):  # type: ignore[no-untyped-def]
        self.updates += 1
        try:
            return await super().update(obj)
        except Conflict:
            self.conflicts += 1
            raise


@dataclass
class Rig:
    """A status writer over a store holding the PodGroup ns/g, with the cache holding it as created
    (what the watch delivered; it delivers nothing more in these tests), and the events it published."""

    store: CountingStore
    stored: PodGroup
    cache: SchedulerCache
    work: InFlight
    writer: StatusWriter
    published: list[object]


async def build_rig(store: CountingStore) -> Rig:
    stored = await store.create(
        PodGroup(
            api_version=SCHEDULING_V1BETA1,
            metadata=ObjectMeta(name="g", namespace="ns"),
            spec=PodGroupSpec(min_member=1),
        )
    )
    cache = SchedulerCache()
    cache._podgroup_raw["ns/g"] = (codec.encode(stored), int(stored.metadata.resource_version or 0))
    published: list[object] = []

    async def publish(event: object) -> int:
        published.append(event)
        return len(published)

    work = InFlight("test")
    writer = StatusWriter(store, cache, SchedulerEvents(publish, source="test"), ownership=SoleOwner(), work=work)
    return Rig(store, stored, cache, work, writer, published)


@pytest.fixture
async def rig() -> Rig:
    return await build_rig(CountingStore())


async def test_consecutive_status_writes_neither_read_nor_conflict_while_the_watch_lags(rig: Rig) -> None:
    scheduled = PodGroupCondition("Scheduled", "True", "tasks in gang are ready to be scheduled")
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Inqueue", (), 0, 0, 0))
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Running", (scheduled,), 0, 0, 0))
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Running", (scheduled,), 2, 0, 0))
    assert (rig.store.reads, rig.store.conflicts) == (0, 0)
    final = await rig.store.get(PodGroup, "ns", "g")
    assert final.status is not None and final.status.phase == "Running" and final.status.running == 2
    assert len(rig.published) == 1  # the verdict "Scheduled", once


async def test_on_a_mirror_the_write_names_the_version_the_value_carries_not_the_kv_revision(rig: Rig) -> None:
    """The kube backend: the relay's KV values carry the apiserver's own resourceVersion, and the KV
    revision is another counter. Writes name the value's version (a write on the KV revision would fail
    its precondition: a conflict, a re-read, a second write), and our own write is told from the watch's
    copy by comparing versions of one counter."""
    kv_revision = int(rig.stored.metadata.resource_version or 0) + 1000  # the mirror bucket's own sequence
    rig.cache._podgroup_raw["ns/g"] = (codec.encode(rig.stored), kv_revision)  # the value keeps its version
    assert stored_object(PodGroup, rig.cache._podgroup_raw["ns/g"]) == rig.stored
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Inqueue", (), 0, 0, 0))
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Running", (), 1, 0, 0))
    assert (rig.store.reads, rig.store.conflicts, rig.store.updates) == (0, 0, 2)
    final = await rig.store.get(PodGroup, "ns", "g")
    assert final.status is not None and (final.status.phase, final.status.running) == ("Running", 1)


def test_a_value_without_a_version_is_at_its_kv_revision() -> None:
    """The NATS backend stores values without a resourceVersion: the KV revision is the version."""
    pg = PodGroup(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="g", namespace="ns"))
    got = stored_object(PodGroup, (codec.encode(pg), 42))
    assert got is not None and got.metadata.resource_version == "42"
    assert stored_object(Pod, (codec.encode(pg), 42)) is None  # not that kind


async def test_statuses_offered_while_a_write_waits_coalesce_into_one_write_of_the_newest(rig: Rig) -> None:
    for phase in ("Pending", "Inqueue", "Running"):  # each a phase change: each due a write
        assert rig.writer.offer_podgroup(PodGroupStatusUpdate("ns/g", phase, (), 0, 0, 0))
    assert rig.work.backlog == 1
    shutdown = asyncio.Event()
    shutdown.set()  # the runner still carries out what was submitted before it stops
    await rig.work.run(shutdown)
    assert rig.store.updates == 1
    final = await rig.store.get(PodGroup, "ns", "g")
    assert final.status is not None and final.status.phase == "Running"


def test_an_unchanged_status_is_judged_once_until_the_store_or_the_members_change() -> None:
    """The loop offers every PodGroup's status every cycle; the same status on the same stored object
    gets the answer it got before without the policy being asked again, and what could change that
    answer (the stored PodGroup, the members, a write still unconfirmed) asks it again."""

    class Members(SoleOwner):
        pass

    cache, clock = SchedulerCache(), [100.0]
    owner = Members()
    owner.members = ("test",)
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    writer = StatusWriter(None, cache, events, ownership=owner, work=InFlight("t"), clock=lambda: clock[0])  # type: ignore[arg-type]
    asked: list[str] = []
    due = writer._sent.due
    writer._sent.due = lambda *a, **k: asked.append("due") or due(*a, **k)  # type: ignore[method-assign]
    scheduled = PodGroupCondition("Scheduled", "True", "ready", "", "s-1")
    update = PodGroupStatusUpdate("ns/g", "Running", (scheduled,), 1, 0, 0)
    cache.podgroups["ns/g"] = replace(group("g"), phase="Inqueue")
    assert writer.offer_podgroup(update) and asked == ["due"]
    assert not writer.offer_podgroup(update) and asked == ["due"] * 2  # sent, unconfirmed: asked again
    cache.podgroups["ns/g"] = replace(group("g"), phase="Running", conditions=(scheduled,))  # stored now
    assert not writer.offer_podgroup(update) and asked == ["due"] * 3  # confirmed
    renewed = replace(update, conditions=(replace(scheduled, transition_id="s-2"),))
    assert not writer.offer_podgroup(renewed) and asked == ["due"] * 3  # the same status: not asked
    owner.members = ("test", "other")
    assert not writer.offer_podgroup(renewed) and asked == ["due"] * 4  # members changed: asked again
    cache.podgroups["ns/g"] = replace(group("g"), phase="Pending")  # someone else wrote the status
    clock[0] += 60
    assert writer.offer_podgroup(renewed) and asked == ["due"] * 5  # written back


async def test_a_store_that_needs_a_diff_base_is_told_of_the_cached_version_a_write_starts_from() -> None:
    """The kube backend's store (vc_core.store.VersionMemory) computes a merge patch from the version it
    knows; the cache reads the mirror's KV itself, so the writer hands it the version it starts from."""

    class RememberingStore(CountingStore):
        def __init__(self) -> None:
            super().__init__()
            self.remembered: list[str | None] = []

        def remember(self, obj: PodGroup) -> None:
            self.remembered.append(obj.metadata.resource_version)

    store = RememberingStore()
    rig = await build_rig(store)
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Inqueue", (), 0, 0, 0))
    assert store.remembered == [rig.stored.metadata.resource_version] and store.reads == 0


async def test_the_history_says_why_a_gang_waits_with_the_explanation_first(rig: Rig) -> None:
    volcano = "10/0 tasks in gang unschedulable: pod group is not ready, 10 minAvailable"
    message = f"{volcano}. Why: Needs 40 nvidia.com/gpu for 10 pods."
    waiting = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", message)
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Pending", (waiting,), 0, 0, 0))
    (event,) = rig.published
    assert event.message == f"Needs 40 nvidia.com/gpu for 10 pods. Scheduler detail: {volcano}."  # type: ignore[attr-defined]
    stored_group = await rig.store.get(PodGroup, "ns", "g")
    assert stored_group.status is not None and stored_group.status.conditions[0].message == message  # type: ignore[index]


async def test_a_gang_whose_pods_are_being_created_is_no_news_for_the_history(rig: Rig) -> None:
    """Every healthy gang is Inqueue with `NotEnoughPodsOfTask` while its pods are created: the condition
    is written, but no Unschedulable event (a Warning Event on kube) is published for it."""
    starting = PodGroupCondition(
        "Unschedulable", "True", "NotEnoughPodsOfTask", "Not enough valid pods of each task for gang-scheduling"
    )
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Inqueue", (starting,), 0, 0, 0))
    written = await rig.store.get(PodGroup, "ns", "g")
    assert written.status is not None and written.status.conditions[0].reason == "NotEnoughPodsOfTask"  # type: ignore[index]
    assert rig.published == []
    stuck = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "3/3 tasks in gang unschedulable")
    await rig.writer.write_podgroup(PodGroupStatusUpdate("ns/g", "Inqueue", (stuck,), 0, 0, 0))
    assert [e.reason for e in rig.published] == ["Unschedulable"]  # type: ignore[attr-defined]

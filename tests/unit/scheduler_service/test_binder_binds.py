"""The gang binder's pod binds against a real NATS store: one bind call per pod, the store's own retry
covering lost races; a pod found bound already is done only when it is bound where the gang wants it."""

from __future__ import annotations

import asyncio
from fractions import Fraction

import msgspec
import pytest

from vc_bus.store import NatsStore
from vc_proto.core import CORE_V1, Container, ObjectMeta, Pod, PodSpec, PodStatus
from vc_runtime.sharding import SoleOwner
from vc_sched_core.framework.decisions import Bind
from vc_scheduler.binder import GangBinder
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger import View

pytestmark = [pytest.mark.nats]


def pending(name: str) -> Pod:
    spec = PodSpec(scheduler_name="volcano", containers=[Container(name="main", image="busybox")])
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace="ns"), spec=spec)


def gang(*binds: Bind) -> Gang:
    return Gang(
        "ns/g",
        binds,
        {b.uid: {"cpu": Fraction(1)} for b in binds},
        {b.node: {"cpu": Fraction(8), "pods": Fraction(110)} for b in binds},
        View(),
    )


async def test_a_stale_copy_an_own_earlier_bind_and_a_pod_bound_elsewhere(nats_store: NatsStore) -> None:
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    binder = GangBinder(nats_store, SchedulerCache(), events, ownership=SoleOwner("s0"), work=InFlight("s0"))
    stale = await nats_store.create(pending("stale"))
    # The cache's copy is behind: a status write came after it. The store's retry re-reads and binds.
    moved = msgspec.structs.replace(stale, status=PodStatus(phase="Pending", message="waiting"))
    await nats_store.update(moved)
    mine = await nats_store.create(pending("mine"))
    await nats_store.bind(mine, "n1")  # bound here before (an earlier owner, or our write that timed out)
    theirs = await nats_store.create(pending("theirs"))
    await nats_store.bind(theirs, "n2")

    await binder.commit(gang(Bind("ns/stale", stale.metadata.uid or "", "n1")))
    assert (await nats_store.get(Pod, "ns", "stale")).spec.node_name == "n1"  # type: ignore[union-attr]

    done = await binder._bind(Bind("ns/mine", mine.metadata.uid or "", "n1"))
    elsewhere = await binder._bind(Bind("ns/theirs", theirs.metadata.uid or "", "n1"))
    assert done and not elsewhere
    assert (await nats_store.get(Pod, "ns", "theirs")).spec.node_name == "n2"  # type: ignore[union-attr]

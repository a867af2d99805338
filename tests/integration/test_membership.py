"""Membership on a real nats-server: keys split between live members, move on leave and on lapse."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
from nats.aio.client import Client

from tests.support.waiting import eventually
from vc_core.ownership import rendezvous_owner
from vc_runtime.membership import Membership

pytestmark = [pytest.mark.nats]

KEYS = [f"default/job-{i}" for i in range(200)]


def test_rendezvous_moves_only_the_leavers_keys() -> None:
    three = ("a", "b", "c")
    before = {k: rendezvous_owner(k, three) for k in KEYS}
    after = {k: rendezvous_owner(k, ("a", "b")) for k in KEYS}
    moved = [k for k in KEYS if before[k] != after[k]]
    assert moved and all(before[k] == "c" for k in moved)
    assert {before[k] for k in KEYS} == set(three)


async def test_two_members_split_keys_and_survivor_takes_over(nc: Client) -> None:
    a = Membership(nc, group="g", instance="a", ttl_s=1.5)
    b = Membership(nc, group="g", instance="b", ttl_s=1.5)
    stop_a, stop_b = asyncio.Event(), asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(a.run(stop_a))
        task_b = tg.create_task(b.run(stop_b))
        await eventually(lambda: a.members == ("a", "b") == b.members)
        await eventually(lambda: all(a.owns(k) != b.owns(k) for k in KEYS))
        assert 0 < sum(a.owns(k) for k in KEYS) < len(KEYS)
        # b crashes without leaving: a takes everything once b's lease is not renewed for a ttl.
        task_b.cancel()
        await eventually(lambda: all(a.owns(k) for k in KEYS))
        assert a.members == ("a",)
        stop_a.set()


async def test_lapsed_lease_fences_writes_until_rejoined(nc: Client) -> None:
    now = [0.0]
    m = Membership(nc, group="fence", instance="x", ttl_s=3.0, clock=lambda: now[0])
    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(m.run(stop))
        await eventually(lambda: m.epoch > 0)
        first_epoch = m.epoch
        now[0] = 2.0
        assert m.can_write() and m.owns("k")
        now[0] = 10.0  # as if the process had been stopped past its lease
        assert not m.can_write() and not m.owns("k")
        await eventually(lambda: m.epoch > first_epoch)  # the next renewal notices and re-joins
        assert m.can_write()
        now[0] = 12.0
        assert m.owns("k")
        stop.set()


def compute(seconds: float, sample: Callable[[], None]) -> None:
    """Python code running for `seconds` without a pause, as a scheduling cycle does, sampling as it goes."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(2000))
        sample()


async def test_leases_are_renewed_while_a_cycle_holds_the_gil_and_the_loop_is_blocked(nc: Client) -> None:
    """A cycle computes in a worker thread for longer than the lease, and meanwhile a synchronous
    callback blocks the event loop for longer than the lease: every renewal still comes in time, as
    the instance's fence and its peer's view of it show all along."""
    ttl = 2.0
    a = Membership(nc, group="busy", instance="a", ttl_s=ttl)
    b = Membership(nc, group="busy", instance="b", ttl_s=ttl)
    lapses: list[str] = []

    def sample() -> None:
        if not a.can_write():
            lapses.append("a's fence closed")
        if b.members != ("a", "b"):
            lapses.append(f"b saw the members {b.members}")

    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(a.run(stop))
        tg.create_task(b.run(stop))
        await eventually(lambda: a.members == ("a", "b") == b.members and a.can_write())
        epoch = a.epoch
        computing = threading.Event()

        def cycle_work() -> None:
            computing.set()
            compute(2.5 * ttl, sample)

        cycle = tg.create_task(asyncio.to_thread(cycle_work))
        await eventually(computing.is_set)
        compute(2 * ttl, sample)  # the event loop is blocked meanwhile
        await cycle
        assert a.epoch == epoch  # never re-joined
        stop.set()
    assert not lapses, sorted(set(lapses))

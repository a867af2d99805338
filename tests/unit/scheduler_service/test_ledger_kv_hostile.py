"""The placement ledger against a real JetStream bucket holding hostile values: following it and
reserving on a key whose value is not a record neither kill the scheduler nor wedge the key (the next
compare-and-set replaces the value with a valid record)."""

from __future__ import annotations

import asyncio
from fractions import Fraction

import pytest
from nats.aio.client import Client

from tests.support.services import eventually
from vc_bus.decoding import DECODE_ERRORS
from vc_scheduler import ledger
from vc_scheduler.ledger import Record, View
from vc_scheduler.ledger_kv import BUCKET, Ledger, announce_key, queue_key

pytestmark = [pytest.mark.nats]

HOSTILE = (
    b"[" * 200_000 + b"]" * 200_000,
    b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    b'{"r": {"u1": ["ns/a", "s0", 1, 1.0, {"cpu": "1e999999999"}]}}',
    b"\xff not json",
)


def _errors() -> float:
    return DECODE_ERRORS.labels(BUCKET, "LedgerRecord")._value.get()


async def test_following_skips_hostile_values_and_goes_on(nc: Client) -> None:
    led = Ledger(nc.jetstream(), instance="s0", can_write=lambda: True)
    kv = await led.open()
    before = _errors()
    for i, data in enumerate(HOSTILE):
        await kv.put(queue_key(f"bad{i}"), data)
    good = Record({"u1": ledger.reservation("ns/a", {"cpu": Fraction(1)}, instance="s1", epoch=1, at=1.0)})
    await kv.put(queue_key("good"), ledger.encode(good))
    shutdown = asyncio.Event()
    follower = asyncio.create_task(led.follow(shutdown))
    try:
        await asyncio.wait_for(led.synced.wait(), 10)
        assert led.record(queue_key("good")) == good
        assert all(led.record(queue_key(f"bad{i}")) == Record() for i in range(len(HOSTILE)))
        assert _errors() == before + len(HOSTILE)
        await kv.put(queue_key("bad0"), ledger.encode(good))  # repaired: followed as any other value

        async def repaired() -> bool:
            return led.record(queue_key("bad0")) == good

        await eventually(repaired, timeout=10)
        assert not follower.done()
    finally:
        shutdown.set()
        await asyncio.wait_for(follower, 10)


async def test_a_reservation_on_a_hostile_key_replaces_it_with_a_record(nc: Client) -> None:
    led = Ledger(nc.jetstream(), instance="s0", can_write=lambda: True)
    kv = await led.open()
    key = queue_key("q1")
    await kv.put(key, HOSTILE[0])
    before = _errors()
    mine = ledger.reservation("ns/a", {"cpu": Fraction(1)}, instance="s0", epoch=1, at=1.0)
    shutdown = asyncio.Event()
    follower = asyncio.create_task(led.follow(shutdown))
    try:
        await asyncio.wait_for(led.synced.wait(), 10)
        outcome = await led.reserve(
            key, {"u1": mine}, {"cpu": Fraction(4), "pods": Fraction(10)}, dict, View(instance="s0", epoch=1), node=None
        )
    finally:
        shutdown.set()
        await asyncio.wait_for(follower, 10)
    assert outcome.record is not None and set(outcome.record.reservations) == {"u1"}
    assert _errors() == before + 1  # followed once, reported
    stored = await kv.get(key)
    assert ledger.decode(stored.value).reservations == {"u1": mine}


async def test_announcements_are_followed_in_order_and_a_stale_retraction_keeps_a_newer_one(nc: Client) -> None:
    """An instance's announcement of the members it plans under returns once its own write is followed
    (so every earlier announcement is known); a hostile one claims nothing; removing an old revision
    leaves a newer announcement of the same instance in place."""
    js = nc.jetstream()
    a, b = (Ledger(js, instance=name, can_write=lambda: True) for name in ("a", "b"))
    kv = await a.open()
    await kv.put(announce_key("evil"), b'{"members": ["' + b"x" * 300 + b'"], "at": 1}')
    shutdown = asyncio.Event()
    followers = [asyncio.create_task(led.follow(shutdown)) for led in (a, b)]
    try:
        await asyncio.wait_for(asyncio.gather(a.synced.wait(), b.synced.wait()), 10)
        assert "evil" not in a.announced  # a name longer than a member's: refused, no claim
        await kv.put(announce_key("negative"), b'{"members": ["n"], "at": 1, "pods": -1}')
        await b.announce(("a", "b"), pods_revision=7)
        await a.announce(("a", "b"))
        assert a.announced["b"].members == ("a", "b")  # b's came first: known once a's own is back
        assert a.announced["b"].pods_revision == 7  # where the pods stream was: the others follow it that far
        assert "negative" not in a.announced  # a revision below zero: refused, no claim
        old = a.announced["b"].revision
        await b.announce(("a", "b", "c"))

        async def newer() -> bool:
            return a.announced.get("b") is not None and a.announced["b"].revision > old

        await eventually(newer, timeout=10)
        await a.retract("b", old)  # stale: b announced again since
        await a.announce(("a",))
        assert a.announced["b"].members == ("a", "b", "c")
        await a.retract("b", a.announced["b"].revision)

        async def gone() -> bool:
            return "b" not in a.announced

        await eventually(gone, timeout=10)
    finally:
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(*followers), 10)

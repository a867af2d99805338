"""vc_bus.buckets.open_bucket against a real nats-server: made once, opened after, and a race is harmless."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from vc_bus.buckets import open_bucket
from vc_bus.connection import connect
from vc_bus.server import NatsServer

pytestmark = [pytest.mark.nats]


async def test_the_first_open_creates_the_bucket_and_later_ones_find_it(nc: Client) -> None:
    js = nc.jetstream()
    made = await open_bucket(js, "TEST_BUCKETS_ONE", ttl_s=60)
    await made.put("k", b"v")
    again = await open_bucket(js, "TEST_BUCKETS_ONE", ttl_s=60)
    assert (await again.get("k")).value == b"v"
    status = await again.status()
    assert status.bucket == "TEST_BUCKETS_ONE" and status.ttl == 60


async def test_instances_racing_to_create_all_get_the_one_bucket(nc: Client) -> None:
    js = nc.jetstream()
    # Different settings too: the second creation is refused, and that instance opens the winner's bucket.
    opened = await asyncio.gather(*(open_bucket(js, "TEST_BUCKETS_RACE", history=1 + i % 2) for i in range(6)))
    await opened[0].put("k", b"v")
    assert all([(await kv.get("k")).value == b"v" for kv in opened])


async def test_direct_gets_are_used_only_where_asked_and_the_bucket_allows_them(nc: Client) -> None:
    js = nc.jetstream()
    leader = await open_bucket(js, "TEST_BUCKETS_DIRECT")
    await leader.put("team-a.j1", b"v")
    direct = await open_bucket(js, "TEST_BUCKETS_DIRECT", direct_gets=True)
    assert (await js.stream_info("KV_TEST_BUCKETS_DIRECT")).config.allow_direct
    asked: list[str] = []

    async def record(msg: Msg) -> None:
        asked.append(msg.subject)

    sub = await nc.subscribe("$JS.API.>", cb=record)
    try:
        assert (await direct.get("team-a.j1")).value == b"v"
        assert (await leader.get("team-a.j1")).value == b"v"
        await nc.flush()
    finally:
        await sub.unsubscribe()
    assert asked == [
        "$JS.API.DIRECT.GET.KV_TEST_BUCKETS_DIRECT.$KV.TEST_BUCKETS_DIRECT.team-a.j1",
        "$JS.API.STREAM.MSG.GET.KV_TEST_BUCKETS_DIRECT",
    ]
    # A bucket made before buckets allowed direct gets is read through the leader even when asked.
    await js.create_key_value(bucket="TEST_BUCKETS_OLD", direct=False)
    old = await open_bucket(js, "TEST_BUCKETS_OLD", direct_gets=True)
    await old.put("k", b"v")
    assert (await old.get("k")).value == b"v"


async def test_opening_waits_out_a_server_that_is_not_there_yet(tmp_path: Path) -> None:
    """A service started while JetStream is unavailable (a cluster electing its leader, a restarting
    server) waits for it instead of crashing: the open made while the server is down completes once it
    is back."""
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="opener") as client:
            server.kill()
            opening = asyncio.create_task(open_bucket(client.jetstream(timeout=1), "TEST_BUCKETS_LATE"))
            await asyncio.sleep(1.5)  # the first attempts fail while the server is down
            assert not opening.done()
            server.start()
            bucket = await asyncio.wait_for(opening, timeout=30)
            await bucket.put("k", b"v")
            assert (await bucket.get("k")).value == b"v"
    finally:
        server.stop()

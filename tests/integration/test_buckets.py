"""vc_bus.buckets.open_bucket against a real nats-server: made once, opened after, and a race is harmless."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client

from vc_bus.buckets import open_bucket

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

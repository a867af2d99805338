"""The relay's pipelined KV writer against a real nats-server (file storage, fsync as configured)."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client
from nats.js import api
from nats.js.errors import KeyNotFoundError

from vc_kube.kvwriter import KvWriter

pytestmark = pytest.mark.nats
BUCKET = "writer-test"


async def bucket(nc: Client) -> None:
    await nc.jetstream().create_key_value(bucket=BUCKET, history=1, storage=api.StorageType.FILE)


async def values(nc: Client, keys: list[str]) -> dict[str, bytes | None]:
    kv = await nc.jetstream().key_value(BUCKET)
    out: dict[str, bytes | None] = {}
    for key in keys:
        try:
            out[key] = (await kv.get(key)).value
        except KeyNotFoundError:
            out[key] = None
    return out


async def test_many_writes_in_flight_land_in_order_per_key(nc: Client) -> None:
    await bucket(nc)
    keys = [f"k{i}" for i in range(20)]
    async with KvWriter(nc.jetstream(), BUCKET, window=32) as writer:
        for round_ in range(50):  # 1,000 writes: each key written 50 times, interleaved
            for key in keys:
                await writer.put(key, f"{key}={round_}".encode())
            assert writer.in_flight <= 32
        await writer.delete("k3")
        await writer.flush()
        assert writer.in_flight == 0
    stored = await values(nc, keys)
    assert stored == {key: None if key == "k3" else f"{key}=49".encode() for key in keys}


async def test_writes_refused_while_the_bucket_is_gone_land_newest_last_once_it_is_back(nc: Client) -> None:
    await bucket(nc)
    js = nc.jetstream()
    async with KvWriter(js, BUCKET, ack_timeout_s=2.0) as writer:
        await writer.put("a", b"0")
        await writer.flush()
        await js.delete_key_value(BUCKET)
        # Refused (no stream answers), each retried after a backoff: only the newest per key is sent again.
        await writer.put("a", b"1")
        await writer.put("a", b"2")
        await writer.put("b", b"1")
        await asyncio.sleep(0)  # the settler sees the refusals and starts backing off
        await bucket(nc)
        async with asyncio.timeout(30):
            await writer.flush()
    assert await values(nc, ["a", "b"]) == {"a": b"2", "b": b"1"}

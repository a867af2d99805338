"""The fault-injecting proxy against a real nats-server: delay, drop and partition as a client sees them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats
import nats.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from tests.chaos.proxy import FaultProxy
from vc_bus.server import NatsServer

pytestmark = [pytest.mark.nats, pytest.mark.integration]


@pytest.fixture
async def proxy(nats_server: NatsServer) -> AsyncIterator[FaultProxy]:
    p = await FaultProxy(nats_server.port).start()
    yield p
    await p.close()


async def _echo(server_url: str) -> Client:
    """A responder connected directly to the server (the proxy sits only in the client's path)."""
    nc = await nats.connect(server_url)

    async def respond(msg: Msg) -> None:
        await msg.respond(msg.data)

    await nc.subscribe("echo", cb=respond)
    return nc


async def _client(proxy: FaultProxy) -> Client:
    return await nats.connect(proxy.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1, ping_interval=60)


async def _answers(nc: Client, within_s: float) -> bool:
    try:
        await nc.request("echo", b"ping", timeout=within_s)
    except (nats.errors.TimeoutError, nats.errors.NoRespondersError):
        return False
    return True


async def _eventually(nc: Client) -> None:
    for _ in range(200):
        if nc.is_connected and await _answers(nc, 0.5):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the client never got an answer through the healed proxy")


async def test_pass_through_and_delay(nats_server: NatsServer, proxy: FaultProxy) -> None:
    echo, nc = await _echo(nats_server.url), await _client(proxy)
    try:
        assert await _answers(nc, 5)
        proxy.delay(1.0)  # both ways: a request cannot come back within 0.3 s
        assert not await _answers(nc, 0.3)
        assert await _answers(nc, 10)  # but it does come back, in order
        proxy.heal()
        await _eventually(nc)
    finally:
        await nc.close()
        await echo.close()


async def test_drop_is_a_black_hole_until_healed(nats_server: NatsServer, proxy: FaultProxy) -> None:
    echo, nc = await _echo(nats_server.url), await _client(proxy)
    try:
        proxy.drop()
        assert not await _answers(nc, 0.5)
        assert nc.is_connected  # nothing told the client: only its requests time out
        proxy.heal()  # the stream lost bytes: the proxy resets it and the client reconnects
        await _eventually(nc)
        assert proxy.connections >= 2
    finally:
        await nc.close()
        await echo.close()


async def test_partition_resets_and_refuses_until_healed(nats_server: NatsServer, proxy: FaultProxy) -> None:
    echo, nc = await _echo(nats_server.url), await _client(proxy)
    try:
        proxy.partition()
        for _ in range(100):
            if not nc.is_connected:
                break
            await asyncio.sleep(0.02)
        assert not nc.is_connected
        with pytest.raises((nats.errors.NoServersError, OSError, nats.errors.Error)):
            await nats.connect(proxy.url, max_reconnect_attempts=0, allow_reconnect=False, connect_timeout=1)
        proxy.heal()
        await _eventually(nc)
    finally:
        await nc.close()
        await echo.close()

"""The services' NATS connection: its batching flusher loses and reorders nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from vc_bus.connection import CoalescingClient, connect
from vc_bus.server import NatsServer

pytestmark = [pytest.mark.nats]


async def test_a_burst_of_requests_is_answered_in_full_and_publishes_keep_their_order(tmp_path: Path) -> None:
    with NatsServer(tmp_path / "nats") as server:
        async with connect(server.url, name="responder") as responder, connect(server.url, name="client") as client:
            assert isinstance(client, CoalescingClient)

            async def echo(msg: object) -> None:
                await msg.respond(msg.data)  # type: ignore[attr-defined]

            await responder.subscribe("echo", cb=echo)
            received: list[bytes] = []
            done = asyncio.Event()

            async def collect(msg: object) -> None:
                received.append(msg.data)  # type: ignore[attr-defined]
                if len(received) == 500:
                    done.set()

            await responder.subscribe("ordered", cb=collect)
            await responder.flush()

            replies = await asyncio.gather(*(client.request("echo", str(i).encode(), timeout=10) for i in range(500)))
            assert [r.data for r in replies] == [str(i).encode() for i in range(500)]

            for i in range(500):  # one publisher's messages arrive in the order it sent them
                await client.publish("ordered", str(i).encode())
            await client.flush()
            await asyncio.wait_for(done.wait(), 10)
            assert received == [str(i).encode() for i in range(500)]

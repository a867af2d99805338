"""The services' request path (vc_bus.rawsub): replies resolve their request directly, the first ones on
a fresh connection included; a request that times out leaves nothing behind and its late reply is
dropped; no responders is said at once; whatever lands in the reply inbox cannot break the reader."""

from __future__ import annotations

import asyncio

import nats.errors
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from vc_bus.connection import connect
from vc_bus.server import NatsServer

pytestmark = [pytest.mark.nats]


async def test_replies_keep_their_headers_and_reach_their_own_request(nats_server: NatsServer, nc: Client) -> None:
    async with connect(nats_server.url, name="responder") as responder:

        async def echo(msg: Msg) -> None:
            if msg.data == b"h":
                await responder.publish(msg.reply, b"h", headers={"X-Seen": "yes"})
            else:
                await msg.respond(msg.data + b"!")

        await responder.subscribe("echo", cb=echo)
        await responder.flush()
        replies = await asyncio.gather(*(nc.request("echo", str(i).encode(), timeout=10) for i in range(200)))
        assert [r.data for r in replies] == [f"{i}!".encode() for i in range(200)]
        with_header = await nc.request("echo", b"h", timeout=10)
        assert with_header.headers == {"X-Seen": "yes"}
    assert not nc._resp_map  # every request's future is gone


async def test_a_timed_out_request_leaves_nothing_and_its_late_reply_is_dropped(
    nats_server: NatsServer, nc: Client
) -> None:
    async with connect(nats_server.url, name="slow") as responder:
        release = asyncio.Event()
        late: list[asyncio.Task[None]] = []

        async def slow(msg: Msg) -> None:
            async def answer() -> None:
                await release.wait()
                await msg.respond(b"late")

            late.append(asyncio.create_task(answer()))

        await responder.subscribe("slow", cb=slow)
        await responder.flush()
        with pytest.raises(nats.errors.TimeoutError):
            await nc.request("slow", b"", timeout=0.2)
        assert not nc._resp_map
        release.set()
        await asyncio.gather(*late)
        await responder.flush()
        await nc.flush()  # the late reply arrived and was dropped: nothing waits for it
        assert not nc._resp_map


async def test_no_responders_is_an_error_at_once(nc: Client) -> None:
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request("nobody.listens", b"", timeout=10)


async def echo(msg: Msg) -> None:
    await msg.respond(msg.data)


async def test_concurrent_first_requests_of_a_fresh_connection_all_get_their_reply(nats_server: NatsServer) -> None:
    """The reply inbox is subscribed by the first request; the others, started meanwhile, must not
    publish before that subscription exists nor have their replies go to a queue nobody reads."""
    async with connect(nats_server.url, name="responder") as responder, connect(nats_server.url, name="fresh") as fresh:
        await responder.subscribe("echo", cb=echo)
        await responder.flush()
        replies = await asyncio.gather(*(fresh.request("echo", str(i).encode(), timeout=10) for i in range(50)))
        assert [r.data for r in replies] == [str(i).encode() for i in range(50)]
        assert len(fresh._raw_handlers) == 1  # one inbox subscription for all of them


async def test_stray_messages_in_the_reply_inbox_are_dropped_and_requests_go_on(
    nats_server: NatsServer, nc: Client
) -> None:
    async with connect(nats_server.url, name="responder") as responder:
        await responder.subscribe("echo", cb=echo)
        await responder.flush()
        assert (await nc.request("echo", b"before", timeout=10)).data == b"before"
        prefix = nc._resp_sub_prefix.decode()
        await responder.publish(prefix + "nosuchtoken", b"stray", headers={"Status": "503"})
        await responder.flush()
        # a token that is not UTF-8 (any publisher may send one) is handled by the reader itself
        nc._on_reply(prefix.encode() + b"\xff\xfe", b"\xff", b"stray", b"NATS/1.0 503\r\nX: \xff\r\n\r\n")
        assert (await nc.request("echo", b"after", timeout=10)).data == b"after"
        assert nc.is_connected and not nc._resp_map


async def test_a_flush_after_subscribe_returns_only_once_the_server_has_the_subscription(nc: Client) -> None:
    """nats-py wrote its PING to the socket ahead of the SUB still in its pending buffer, so a flush
    could return before the server had the subscription (another connection's request then met "no
    responders"). The bytes must leave in the order the commands were given."""
    assert nc._transport is not None
    transport = nc._transport
    sent: list[bytes] = []
    write, writelines = transport.write, transport.writelines

    def record_write(data: bytes) -> None:
        sent.append(bytes(data))
        write(data)

    def record_writelines(lines: list[bytes]) -> None:
        sent.extend(bytes(line) for line in lines)
        writelines(lines)

    transport.write, transport.writelines = record_write, record_writelines  # type: ignore[method-assign]
    try:
        await nc.subscribe("ordered")
        await nc.flush()
    finally:
        transport.write, transport.writelines = write, writelines  # type: ignore[method-assign]
    wire = b"".join(sent)
    assert b"SUB ordered" in wire and wire.index(b"SUB ordered") < wire.index(b"PING\r\n")

"""The connection's reader (vc_bus.wire.WireParser) against nats-py's own parser: on any stream of
frames and operations, cut into reads at any points, both deliver the same messages in the same order
and call the client for the same operations; raw handlers get their messages directly."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from nats.protocol.parser import Parser

from vc_bus.wire import WireParser

RAW_SID = 7  # a raw subscription's sid; others go through the client's _process_msg


class Client:
    """What a parser calls on its connection, recorded."""

    def __init__(self, raw: bool) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.stats = {"in_msgs": 0, "in_bytes": 0}
        self._raw_handlers = {RAW_SID: self._raw} if raw else {}

    def _raw(self, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        self.seen.append(("msg", RAW_SID, subject, reply, data, headers))

    async def _process_msg(self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        handler = self._raw_handlers.get(sid)  # as RawDeliveryClient._process_msg routes them
        if handler is None:
            self.seen.append(("msg", sid, subject, reply, data, headers))
            return
        self.stats["in_msgs"] += 1
        self.stats["in_bytes"] += len(data)
        handler(subject, reply, data, headers)

    async def _process_ping(self) -> None:
        self.seen.append(("ping",))

    async def _process_pong(self) -> None:
        self.seen.append(("pong",))

    async def _process_info(self, info: dict[str, Any]) -> None:
        self.seen.append(("info", info))

    async def _process_err(self, message: str) -> None:
        self.seen.append(("err", message))


subjects = st.sampled_from([b"$KV.pods.ns.a-0", b"_INBOX.x.y", b"s"])
replies = st.sampled_from([b"", b"$JS.ACK.KV_pods.c.1.10.10.1700000000.0", b"_INBOX.r"])
payloads = st.binary(max_size=40).map(lambda b: b.replace(b"\r\n", b"\n"))  # bytes as any payload may hold
header_blocks = st.sampled_from([b"NATS/1.0\r\nKV-Operation: DEL\r\n\r\n", b"NATS/1.0 100 Idle Heartbeat\r\n\r\n"])


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["msg", "msg-spaced", "hmsg", "ping", "pong", "ok", "info"]))
    sid = draw(st.sampled_from([RAW_SID, 3]))
    subject, reply, payload = draw(subjects), draw(replies), draw(payloads)
    named = b" ".join(p for p in (subject, str(sid).encode(), reply) if p)
    if kind == "msg":
        return b"MSG %s %d\r\n%s\r\n" % (named, len(payload), payload)
    if kind == "msg-spaced":  # a control line of another shape: nats-py's parser reads it, and its payload
        return b"MSG  %s  %d\r\n%s\r\n" % (named, len(payload), payload)
    if kind == "hmsg":
        headers = draw(header_blocks)
        return b"HMSG %s %d %d\r\n%s%s\r\n" % (named, len(headers), len(headers) + len(payload), headers, payload)
    return {"ping": b"PING\r\n", "pong": b"PONG\r\n", "ok": b"+OK\r\n", "info": b'INFO {"server_id":"x"}\r\n'}[kind]


def feed(parser: Parser, stream: bytes, cuts: list[int]) -> None:
    async def run() -> None:
        last = 0
        for cut in [*sorted(c % (len(stream) + 1) for c in cuts), len(stream)]:
            await parser.parse(stream[last:cut])
            last = max(last, cut)

    asyncio.run(run())


@settings(max_examples=300, deadline=None)
@given(st.lists(frames(), max_size=12), st.lists(st.integers(min_value=0), max_size=8))
def test_the_reader_delivers_what_nats_pys_parser_delivers_however_the_reads_are_cut(
    stream_frames: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(stream_frames)
    theirs, ours = Client(raw=False), Client(raw=True)
    feed(Parser(theirs), stream, cuts)
    wire = WireParser(ours)
    feed(wire, stream, cuts)
    assert ours.seen == theirs.seen
    assert not wire.buf  # nothing left behind once every frame is whole
    raw = [m for m in ours.seen if m[0] == "msg" and m[1] == RAW_SID]
    assert ours.stats == {"in_msgs": len(raw), "in_bytes": sum(len(m[4]) for m in raw)}


def test_a_frame_cut_anywhere_is_delivered_once_it_is_whole() -> None:
    frame = b"MSG $KV.pods.ns.a-0 7 $JS.ACK.KV_pods.c.1.10.10.1700000000.0 5\r\nhello\r\n"
    for cut in range(len(frame) + 1):
        client = Client(raw=True)
        feed(WireParser(client), frame * 2, [cut, cut + len(frame)])
        assert [m[4] for m in client.seen] == [b"hello", b"hello"], cut

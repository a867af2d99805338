"""The connection's reader for the messages a watch receives: MSG and HMSG frames taken whole from the
buffer without nats-py's regular expressions, and handed to a raw handler (rawsub.py) directly.

nats-py's parser matches each frame's control line against two regular expressions and then deletes
the frame from the front of its buffer, which moves the rest of the buffer each time. Every scheduler
instance reads every change of the cluster, so at 100,000 pods that is a few hundred thousand frames per
instance. This reader splits the control line on its spaces, walks the buffer by offset and trims it
once per read, keeping a frame that is not all here yet for the next read. Any other operation (PING,
PONG, INFO, +OK, -ERR) and any control line of another shape goes to nats-py's own parser alone, one at
a time, so everything but the common case is parsed exactly as nats-py parses it.
"""

from __future__ import annotations

from typing import Any

from nats.protocol.parser import AWAITING_MSG_PAYLOAD, Parser

_MSG = b"MSG "
_HMSG = b"HMSG "
_CRLF = b"\r\n"
_MAX_CONTROL_LINE = 4096  # nats-server's default max_control_line


class WireParser(Parser):
    async def parse(self, data: bytes = b"") -> None:
        buf = self.buf
        buf.extend(data)
        nc: Any = self.nc
        handlers, stats = nc._raw_handlers, nc.stats
        at = 0
        while True:
            if self.state == AWAITING_MSG_PAYLOAD:
                # The payload of a frame whose control line nats-py's parser read (at the buffer's start).
                if len(buf) < self.needed + 2 or not await self._by_nats_py(self.needed + 2):
                    return
                continue
            frame = _frame(buf, at) if at < len(buf) else _INCOMPLETE
            if frame is _INCOMPLETE:
                break
            if frame is None:  # another operation, or a line nats-py's parser is left to judge
                del buf[:at]
                at = 0
                end = buf.find(_CRLF)
                if end < 0 or not await self._by_nats_py(end + 2):
                    return
                continue
            sid, subject, reply, headers, payload, at = frame
            handler = handlers.get(sid)
            if handler is not None:
                stats["in_msgs"] += 1
                stats["in_bytes"] += len(payload)
                handler(subject, reply, payload, headers)
                continue
            del buf[:at]  # nats-py's delivery may await: the buffer is then as it expects it
            at = 0
            await nc._process_msg(sid, subject, reply, payload, headers)
            if self.buf is not buf:
                return  # the connection was reset meanwhile: what is left belongs to the old one
        if at:
            del buf[:at]

    async def _by_nats_py(self, length: int) -> bool:
        """nats-py's parser on the buffer's first `length` bytes alone (one operation's line, or the
        payload of the frame it began); False if the connection was reset meanwhile."""
        buf = self.buf
        rest = buf[length:]
        del buf[length:]
        await super().parse()
        if self.buf is not buf:
            return False
        buf.extend(rest)
        return True


_INCOMPLETE: Any = object()
Frame = tuple[int, bytes, bytes, bytes | None, bytes, int]


def _frame(buf: bytearray, at: int) -> Frame | None:
    """The complete MSG or HMSG frame at `at`: (sid, subject, reply, the header block or None, the
    payload, where the next frame starts). _INCOMPLETE when it is not all here yet; None when what is
    there is something else."""
    if buf.startswith(_MSG, at):
        sizes = 1
    elif buf.startswith(_HMSG, at):
        sizes = 2
    else:
        return None
    end = buf.find(_CRLF, at, at + _MAX_CONTROL_LINE)
    if end < 0:
        return _INCOMPLETE
    # MSG <subject> <sid> [reply] <size>; HMSG <subject> <sid> [reply] <header size> <total size>
    fields = bytes(buf[at:end]).split(b" ")
    named = len(fields) - 1 - sizes
    if named not in (2, 3) or not all(f.isdigit() for f in (fields[2], *fields[-sizes:])):
        return None
    start = end + 2
    total = int(fields[-1])
    header_size = int(fields[-2]) if sizes == 2 else 0
    after = start + total + 2
    if header_size > total:
        return None
    if after > len(buf):
        return _INCOMPLETE
    reply = fields[3] if named == 3 else b""
    headers = bytes(buf[start : start + header_size]) if sizes == 2 else None
    return int(fields[2]), fields[1], reply, headers, bytes(buf[start + header_size : start + total]), after

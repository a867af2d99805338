"""Raw subscriptions: a subscription's messages go straight to a plain function, as bytes.

nats-py hands every message of a subscription to an `asyncio.Queue` as a `Msg` (its subject and reply
decoded, its headers parsed into a dict), and a task per subscription takes it out again. For a watch
that receives every change of a busy bucket that hop is most of the cost of a message. A raw handler
is called by the connection's reader itself, synchronously, with the bytes as they were parsed; it must
not block (it files the message and returns).

The subscription is still an ordinary nats-py subscription (so nats-py re-subscribes it after a
reconnect); only the delivery is different.
"""

from __future__ import annotations

from collections.abc import Callable

from nats.aio.client import Client
from nats.aio.subscription import Subscription

# (subject, reply, payload, raw headers or None): the headers are the "NATS/1.0 ...\r\n" block.
RawHandler = Callable[[bytes, bytes, bytes, bytes | None], None]


class RawDeliveryClient(Client):
    """nats-py's client plus `subscribe_raw` (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._raw_handlers: dict[int, RawHandler] = {}

    async def subscribe_raw(self, subject: str, handler: RawHandler) -> Subscription:
        sub = await self.subscribe(subject)  # no callback: its queue stays empty, the handler gets the messages
        self._raw_handlers[sub._id] = handler
        return sub

    async def unsubscribe_raw(self, sub: Subscription) -> None:
        self._raw_handlers.pop(sub._id, None)
        await sub.unsubscribe()

    async def _process_msg(self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        handler = self._raw_handlers.get(sid)
        if handler is None:
            await super()._process_msg(sid, subject, reply, data, headers)
            return
        self.stats["in_msgs"] += 1
        self.stats["in_bytes"] += len(data)
        handler(subject, reply, data, headers)


def parse_headers(raw: bytes) -> dict[str, str]:
    """A raw header block as nats-py's `Msg.headers`: an inline status as "Status" and "Description"."""
    first, _, rest = raw.partition(b"\r\n")
    headers: dict[str, str] = {}
    status_line = first[len(b"NATS/1.0") :].strip()
    if status_line:
        code, _, description = status_line.partition(b" ")
        if code.isdigit():
            headers["Status"] = code.decode()
        if description:
            headers["Description"] = description.decode(errors="replace")
    for line in rest.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if sep:
            headers[name.strip().decode(errors="replace")] = value.strip().decode(errors="replace")
    return headers

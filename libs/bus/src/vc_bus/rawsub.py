"""Raw subscriptions: a subscription's messages go straight to a plain function, as bytes; and a
request/reply path built on one.

nats-py hands every message of a subscription to an `asyncio.Queue` as a `Msg` (its subject and reply
decoded, its headers parsed into a dict), and a task per subscription takes it out again. For a watch
that receives every change of a busy bucket that hop is most of the cost of a message. A raw handler
is called by the connection's reader itself, synchronously, with the bytes as they were parsed; it must
not block (it files the message and returns).

The subscription is still an ordinary nats-py subscription (so nats-py re-subscribes it after a
reconnect); only the delivery is different.

Requests (every KV write and JetStream publish is one) go through the same: nats-py's reply inbox is a
raw subscription that resolves the waiting future directly, and a request waits with
`asyncio.timeout` instead of `wait_for`, with the NUID alone as its token (nats-py adds two random bytes
from `secrets`: an urandom call per request; the NUID is already unique per connection).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nats import errors
from nats.aio.client import PING_PROTO, Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

# (subject, reply, payload, raw headers or None): the headers are the "NATS/1.0 ...\r\n" block.
RawHandler = Callable[[bytes, bytes, bytes, bytes | None], None]


class RawDeliveryClient(Client):
    """nats-py's client plus `subscribe_raw` (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._raw_handlers: dict[int, RawHandler] = {}
        self._reply_token_at = 0

    async def subscribe_raw(self, subject: str, handler: RawHandler) -> Subscription:
        # The handler is in place before the SUB can reach the server: a message delivered while
        # `subscribe` flushes would otherwise go to the subscription's queue, which nobody reads.
        # nats-py numbers subscriptions `_sid + 1` synchronously, before its first await.
        sid = self._sid + 1
        self._raw_handlers[sid] = handler
        try:
            sub = await self.subscribe(subject)  # no callback: its queue stays empty, the handler gets the messages
        except BaseException:
            self._raw_handlers.pop(sid, None)
            raise
        assert sub._id == sid, "nats-py numbered the subscription differently"
        return sub

    async def unsubscribe_raw(self, sub: Subscription) -> None:
        self._raw_handlers.pop(sub._id, None)
        await sub.unsubscribe()

    async def _send_ping(self, future: asyncio.Future[bool] | None = None) -> None:
        # nats-py writes a PING straight to the socket, ahead of the commands still waiting in its
        # pending buffer for the flusher: `flush()` right after `subscribe()` could see its PONG before
        # the SUB had left, and another connection's publish then find no interest ("no responders").
        # The pending commands go first, then the PING, both now: the PONG means the server has them.
        # (Not queued behind them: a PING left in the buffer across a reconnect would be sent on the
        # new connection, and its PONG answer a later flush too early.)
        self._pongs.append(future if future is not None else asyncio.get_running_loop().create_future())
        if self._transport is None or not self.is_connected:
            return  # as nats-py's own would: no PONG comes, the flush times out or a reconnect resets it
        if self._pending_data_size > 0:
            self._transport.writelines(self._pending[:])
            self._pending = []
            self._pending_data_size = 0
        self._transport.write(PING_PROTO)
        await self._flush_pending()

    # -- requests -------------------------------------------------------------------------------------
    async def _init_request_sub(self) -> None:
        # The prefix is set before the first await, and `subscribe` queues the SUB before its first
        # await too: a concurrent request sees the prefix and its PUB is queued after the SUB, so its
        # reply cannot arrive before the subscription exists.
        self._resp_map = {}
        prefix = self._inbox_prefix[:]
        prefix.extend(b".")
        prefix.extend(self._nuid.next())
        prefix.extend(b".")
        self._resp_sub_prefix = prefix
        self._reply_token_at = len(prefix)
        await self.subscribe_raw(prefix.decode() + "*", self._on_reply)

    def _on_reply(self, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        # Called by the connection's reader: it must not raise, whatever reaches the inbox (anyone
        # may publish to it), so every decode replaces what is not UTF-8.
        future = self._resp_map.get(subject[self._reply_token_at :].decode(errors="replace"))
        if future is None or future.done():
            return  # a reply that came after its request gave up, or a second reply
        future.set_result(
            Msg(
                _client=self,
                subject=subject.decode(errors="replace"),
                reply=reply.decode(errors="replace"),
                data=data,
                headers=parse_headers(headers) if headers else None,
            )
        )

    async def _request_new_style(
        self,
        subject: str,
        payload: bytes,
        timeout: float = 1,  # noqa: ASYNC109 (nats-py's signature)
        headers: dict[str, Any] | None = None,
    ) -> Msg:
        if self.is_draining_pubs:
            raise errors.ConnectionDrainingError
        if not self._resp_sub_prefix:
            await self._init_request_sub()
        assert self._resp_sub_prefix
        token = self._nuid.next()
        key = token.decode()
        inbox = self._resp_sub_prefix[:]
        inbox.extend(token)
        future: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self._resp_map[key] = future
        try:
            # The timeout bounds the whole request, the publish included (it may wait for the
            # outbound buffer to drain); whatever ends it, the future leaves the map.
            async with asyncio.timeout(timeout):
                await self.publish(subject, payload, reply=inbox.decode(), headers=headers)
                return await future
        except TimeoutError:
            raise errors.TimeoutError from None
        finally:
            self._resp_map.pop(key, None)

    async def _process_msg(self, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        handler = self._raw_handlers.get(sid)
        if handler is None:
            # nats-py's parser passes None for a message without headers, though it annotates bytes.
            await super()._process_msg(sid, subject, reply, data, headers)  # type: ignore[arg-type]
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

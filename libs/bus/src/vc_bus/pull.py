"""A lean JetStream pull consumer: the server's deliveries land in a list, the reader takes them in bulk.

nats-py's `PullSubscription.fetch()` spends, per message, a uuid4 (an urandom syscall), an asyncio
Task and an `asyncio.wait_for`; at 10,000 pods that was the largest cost of every service. Here the
consumer drives its pull requests itself (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`):

- one request is out at a time: `BATCH` messages, expiring after `EXPIRES_S`, with idle heartbeats
  every `HEARTBEAT_S`. The next goes out once the server has delivered the whole batch (or said the
  request ended: 408) and the reader has taken what arrived, so at most one batch waits in memory;
- the messages arrive in a plain function (`RawDeliveryClient.subscribe_raw`, or a callback
  subscription on a stock nats-py client) and wait in a list; `take()` hands over all of them at once.

Nothing may be missed, so anything that could have lost a message ends this consumer (`take()` raises
`ConsumerLost`) and the caller opens a new one after the last message it used: a gap in the consumer
sequence (a delivery lost while the connection was down), a heartbeat saying more was delivered than
arrived, a 409 (consumer deleted, leadership change...) or 503 (no consumer), a reconnect of the client,
or silence for `SILENCE_S` while a request is out (the consumer's server went away).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api
from nats.js.errors import APIError, BadRequestError

from vc_bus.rawsub import RawDeliveryClient, parse_headers
from vc_core.retry import RetryPolicy

BATCH: Final = 1024
EXPIRES_S: Final = 30.0
HEARTBEAT_S: Final = 5.0
SILENCE_S: Final = 2 * HEARTBEAT_S + 1.0
# How often a waiting reader looks at the clock and the connection (no message costs anything for it).
TICK_S: Final = 1.0
_KV_REMOVED: Final = ("DEL", "PURGE")
# A reader whose consumer failed (any NATS failure) opens a new one after its last message, for as long as
# it reads: a KV watch, the events reader.
RESUME_RETRY: Final = RetryPolicy((Exception,), base_s=0.05, cap_s=2.0)
_NS: Final = 1_000_000_000


class ConsumerLost(Exception):
    """This consumer may have missed a message, or can deliver no more: open another one."""


@dataclass(slots=True)
class Delivery:
    subject: str
    sequence: int  # the stream sequence (a KV bucket's revision)
    pending: int  # messages the consumer still had to deliver after this one
    data: bytes
    removed: bool  # a KV delete or purge marker


class PullConsumer:
    """An ephemeral consumer with `config` on `stream`: `await open()`, then `take()` until it raises."""

    def __init__(self, nc: Client, stream: str, config: api.ConsumerConfig, *, batch: int = BATCH) -> None:
        self._nc = nc
        self._stream = stream
        self._config = config
        self._batch = batch
        self._request = msgspec.json.encode(
            {"batch": batch, "expires": int(EXPIRES_S * _NS), "idle_heartbeat": int(HEARTBEAT_S * _NS)}
        )
        self._name = ""
        self._next_subject = ""
        self._inbox = ""
        self._sub: Subscription | None = None
        self._ready: list[Delivery] = []
        self._owed = 0  # messages the request that is out may still bring
        self._consumer_seq = 0  # the consumer sequence of the last delivery
        self._failure: ConsumerLost | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._heard_at = 0.0
        self._reconnects = 0

    async def open(self) -> int:
        """Create the consumer and send the first request; the messages it has to deliver."""
        info = await self._nc.jetstream().add_consumer(self._stream, _named(self._config))
        self._name = info.name
        self._next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{self._stream}.{info.name}"
        await self._listen()
        await self._send_request()
        return int(info.num_pending or 0)

    async def _listen(self) -> None:
        """Subscribe to a new inbox of this connection's, where the deliveries will arrive."""
        self._inbox = self._nc.new_inbox()
        self._reconnects = self._nc.stats["reconnects"]
        if isinstance(self._nc, RawDeliveryClient):
            self._sub = await self._nc.subscribe_raw(self._inbox, self._on_raw)
        else:
            self._sub = await self._nc.subscribe(self._inbox, cb=self._on_msg)

    async def take(self) -> list[Delivery]:
        """Every delivery that arrived since the last call (at least one: waits for it)."""
        loop = asyncio.get_running_loop()
        while not self._ready:
            if self._failure is not None:
                raise self._failure
            if self._owed <= 0:
                await self._send_request()
            self._check(loop.time())
            self._waiter = loop.create_future()
            handle = loop.call_later(TICK_S, _wake, self._waiter)
            try:
                await self._waiter
            finally:
                handle.cancel()
                self._waiter = None
        ready, self._ready = self._ready, []
        self._heard_at = loop.time()
        if self._owed <= 0 and self._failure is None:
            await self._send_request()  # the reader works on this batch while the next one comes
        return ready

    async def close(self) -> None:
        """Stop listening and delete the consumer (without waiting for the server's answer)."""
        self._failure = self._failure or ConsumerLost("closed")
        with contextlib.suppress(Exception):  # best effort: an ephemeral consumer goes away by itself too
            if self._sub is not None:
                if isinstance(self._nc, RawDeliveryClient):
                    await self._nc.unsubscribe_raw(self._sub)
                else:
                    await self._sub.unsubscribe()
            if self._name:
                await self._delete()

    async def _delete(self) -> None:
        await self._nc.publish(f"$JS.API.CONSUMER.DELETE.{self._stream}.{self._name}", b"")

    async def _send_request(self) -> None:
        self._owed = self._batch
        self._heard_at = asyncio.get_running_loop().time()
        await self._nc.publish(self._next_subject, self._request, reply=self._inbox)

    def _check(self, now: float) -> None:
        if self._nc.stats["reconnects"] != self._reconnects:
            self._fail("the connection was re-established")
        elif self._owed > 0 and now - self._heard_at > SILENCE_S:
            self._fail(f"no message nor heartbeat for {SILENCE_S:.0f}s")

    # -- deliveries, in the connection's reader ------------------------------------------------------
    def _on_raw(self, subject: bytes, reply: bytes, data: bytes, headers: bytes | None) -> None:
        self._receive(subject.decode(), reply.decode(), data, parse_headers(headers) if headers else None)

    async def _on_msg(self, msg: Msg) -> None:
        self._receive(msg.subject, msg.reply, msg.data, msg.headers)

    def _receive(self, subject: str, reply: str, data: bytes, headers: dict[str, str] | None) -> None:
        if self._failure is not None:
            return
        removed = False
        if headers is not None:
            status = headers.get("Status")
            if status is not None:
                self._on_status(status, headers)
                return
            removed = headers.get("KV-Operation") in _KV_REMOVED
        tokens = reply.split(".")
        # $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>, or the
        # newer form with <domain>.<account hash> after ACK and a random token at the end.
        at = 5 if len(tokens) == 9 else 7
        try:
            sequence, consumer_seq, pending = int(tokens[at]), int(tokens[at + 1]), int(tokens[at + 3])
        except (IndexError, ValueError):
            self._fail(f"a delivery with an unexpected reply subject {reply!r}")
            return
        if consumer_seq != self._consumer_seq + 1:
            self._fail(f"delivery {consumer_seq} after {self._consumer_seq}: some were lost")
            return
        self._consumer_seq = consumer_seq
        self._owed -= 1
        self._ready.append(Delivery(subject, sequence, pending, data, removed))
        self._wake_reader()

    def _on_status(self, status: str, headers: dict[str, str]) -> None:
        self._heard_at = asyncio.get_running_loop().time()
        if status == "100":  # idle heartbeat: it says how many messages the consumer has delivered
            delivered = headers.get("Nats-Last-Consumer")
            if delivered is not None and delivered.isdigit() and int(delivered) != self._consumer_seq:
                self._fail(f"the server delivered {delivered} messages, {self._consumer_seq} arrived")
        elif status in ("404", "408"):  # the request ended (expired) before its batch was full
            self._owed = 0
            self._wake_reader()  # it sends the next request
        else:
            self._fail(f"status {status} {headers.get('Description', '')}".strip())

    def _fail(self, reason: str) -> None:
        if self._failure is None:
            self._failure = ConsumerLost(f"{self._stream} consumer {self._name}: {reason}")
        self._wake_reader()

    def _wake_reader(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


# Who creates a connection's consumers: itself, or (a tenant's) admission on its behalf, which
# vc_bus.brokered registers here. Kept per connection so every reader on it (a store's watches, the
# history) reads the way its identity may, with no flag to pass down every call.
_OPENERS: Final[weakref.WeakKeyDictionary[Client, Callable[[Client, str, api.ConsumerConfig, int], PullConsumer]]] = (
    weakref.WeakKeyDictionary()
)


def consumer_for(nc: Client, stream: str, config: api.ConsumerConfig, *, batch: int = BATCH) -> PullConsumer:
    """A consumer with `config` on `stream`, made the way `nc`'s identity may make one (not yet open)."""
    opener = _OPENERS.get(nc)
    return opener(nc, stream, config, batch) if opener is not None else PullConsumer(nc, stream, config, batch=batch)


def register_opener(nc: Client, opener: Callable[[Client, str, api.ConsumerConfig, int], PullConsumer]) -> None:
    _OPENERS[nc] = opener


def _named(config: api.ConsumerConfig) -> api.ConsumerConfig:
    """The consumer with a name, so that nats-py creates it on `CONSUMER.CREATE.<stream>.<name>.<filter>`:
    the server then checks the filter against the subject, and so can a reader's permissions."""
    check_filter(config)
    return config if config.name else config.evolve(name=secrets.token_hex(11))


def check_filter(config: api.ConsumerConfig) -> None:
    """A filter with white space in it is refused as the server would (no subject can carry it: the
    publish would break the connection)."""
    if any(c.isspace() for c in config.filter_subject or ""):
        raise BadRequestError(code=400, err_code=_INVALID_SUBJECT, description=f"filter {config.filter_subject!r}")


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


_INVALID_SUBJECT: Final = 10052  # nats-server's error code for "invalid subject" (sent with code 500)


def refused_filter(exc: Exception) -> bool:
    """Whether the server refused a consumer for its request (its filter subject: a namespace or name
    that is no subject token), which no retry changes. Anything else, a leader election included, is
    worth a new consumer."""
    return isinstance(exc, BadRequestError) or (isinstance(exc, APIError) and exc.err_code == _INVALID_SUBJECT)

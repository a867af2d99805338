"""Puts and deletes into one KV bucket without waiting for each acknowledgement (the relay's writer).

With fsync on every write, awaiting each put's ack before sending the next caps a relay at one disk
sync per change. Here up to `window` writes are in flight at once:

- Order: every write goes out through one connection, sent in call order (nothing is awaited between
  taking the call and queueing the message), and the server stores a connection's messages in the
  order they arrive, so a key's values land in the order given.
- Nothing is lost: a write whose ack says error, or does not come within `ack_timeout_s`, is sent
  again after a backoff, unless a later write of the same key was given meanwhile: that one was sent
  after it, so it lands after it and settles the key (sending the old value again would overwrite it).
- `flush()` returns once everything given so far is acknowledged (the relay calls it before it says
  it is synced).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass

import structlog
from nats.js.api import PubAck
from nats.js.client import JetStreamContext
from nats.js.kv import KV_DEL, KV_OP
from prometheus_client import Histogram

from vc_core.retry import RetryPolicy

log = structlog.get_logger(__name__)

ACK_SECONDS = Histogram(
    "tephra_relay_kv_ack_seconds",
    "Relay: from sending a KV write to its acknowledgement (the relay's part of the mirror's lag)",
    buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
MAX_BACKOFF_S = 10.0
# A KV write is sent again for as long as the relay runs (puts are idempotent).
KV_RETRY = RetryPolicy((Exception,), base_s=0.1, cap_s=MAX_BACKOFF_S)
_DELETE = {KV_OP: KV_DEL}


@dataclass(slots=True)
class _Write:
    key: str
    value: bytes | None  # None: a delete
    ack: asyncio.Future[PubAck]
    sent: float


class KvWriter:
    """Use as `async with KvWriter(js, bucket) as writer:`; leaving it does not flush (call flush())."""

    def __init__(self, js: JetStreamContext, bucket: str, *, window: int = 256, ack_timeout_s: float = 10.0) -> None:
        self._js = js
        self._prefix = f"$KV.{bucket}."
        self._window = window
        self._ack_timeout_s = ack_timeout_s
        self._in_flight: deque[_Write] = deque()
        self._newest: dict[str, _Write] = {}  # per key, its newest write not yet acknowledged
        self._progress = asyncio.Event()  # set whenever the oldest write settles
        self._sent = asyncio.Event()  # set while anything is in flight
        self._settler: asyncio.Task[None] | None = None

    async def __aenter__(self) -> KvWriter:
        self._settler = asyncio.create_task(self._settle_forever(), name=f"kv-writer:{self._prefix}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._settler is not None:
            self._settler.cancel()
            try:
                await self._settler
            except asyncio.CancelledError:
                pass
        for write in self._in_flight:
            write.ack.cancel()  # frees nats-py's slot for it

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def put(self, key: str, value: bytes) -> None:
        """Returns once the write is sent (waiting only for room in the window), not once stored."""
        await self._room()
        await self._send(key, value)

    async def delete(self, key: str) -> None:
        await self._room()
        await self._send(key, None)

    async def flush(self) -> None:
        """Until every write given so far is acknowledged (failed ones written again first)."""
        while self._in_flight:
            self._check_settler()
            self._progress.clear()
            await self._progress.wait()

    async def _room(self) -> None:
        while len(self._in_flight) >= self._window:
            self._check_settler()
            self._progress.clear()
            await self._progress.wait()

    def _check_settler(self) -> None:
        if self._settler is None:
            raise RuntimeError("KvWriter used outside `async with`")
        if self._settler.done():
            raise RuntimeError("KvWriter's settler stopped") from self._settler.exception()

    async def _send(self, key: str, value: bytes | None) -> None:
        failures = 0
        while True:
            try:
                ack = await self._js.publish_async(
                    self._prefix + key, value if value is not None else b"", headers=_DELETE if value is None else None
                )
                break
            except Exception as exc:  # nats-py's errors share no base class (closed, buffer full, ...)
                failures += 1
                delay = KV_RETRY.delay_s(failures)
                log.warning("relay.kv_retry", key=key, error=repr(exc), delay_s=delay)
                await asyncio.sleep(delay)
        write = _Write(key, value, ack, time.monotonic())
        self._in_flight.append(write)
        self._newest[key] = write
        self._sent.set()

    async def _settle_forever(self) -> None:
        failures = 0
        while True:
            if not self._in_flight:
                self._sent.clear()
                await self._sent.wait()
                continue
            oldest = self._in_flight[0]
            if not oldest.ack.done():
                wait_s = oldest.sent + self._ack_timeout_s - time.monotonic()
                await asyncio.wait((oldest.ack,), timeout=max(0.0, wait_s))
            self._in_flight.popleft()
            self._progress.set()
            if _acknowledged(oldest.ack):
                failures = 0
                ACK_SECONDS.observe(time.monotonic() - oldest.sent)
                if self._newest.get(oldest.key) is oldest:
                    del self._newest[oldest.key]
                continue
            error = _failure(oldest.ack)
            oldest.ack.cancel()  # no ack in time: stop waiting for it (and free nats-py's slot)
            failures += 1
            again = self._newest.get(oldest.key) is oldest
            log.warning("relay.kv_write_failed", key=oldest.key, error=error, again=again)
            if not again:
                continue  # a later write of this key was sent after it: that one settles the key
            await asyncio.sleep(KV_RETRY.delay_s(failures))
            if self._newest.get(oldest.key) is oldest:  # nothing newer was given while sleeping
                await self._send(oldest.key, oldest.value)


def _acknowledged(ack: asyncio.Future[PubAck]) -> bool:
    return ack.done() and not ack.cancelled() and ack.exception() is None


def _failure(ack: asyncio.Future[PubAck]) -> str:
    if not ack.done() or ack.cancelled():
        return "no acknowledgement in time"
    return repr(ack.exception())

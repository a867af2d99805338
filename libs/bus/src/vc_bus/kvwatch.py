"""A resumable change feed of a JetStream KV bucket (or part of it), at the level of raw entries.

From revision 0 it first replays each key's newest value (LAST_PER_SUBJECT), then yields SYNCED once
it has reached the stream's last sequence as of the start, then follows live. After any failure
(disconnect, server restart, vanished consumer) it re-subscribes from the last revision it yielded:
entries arrive in sequence order, so that resume is exact.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog
from nats.aio.msg import Msg
from nats.js import api
from nats.js.client import JetStreamContext
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE

from vc_core.store import WatchOp

log = structlog.get_logger(__name__)

WATCH_BATCH = 1024
WATCH_IDLE_S = 2.0


@dataclass(frozen=True, slots=True)
class RawEntry:
    op: WatchOp
    revision: int
    key: str = ""
    value: bytes = b""


async def watch_bucket(
    js: JetStreamContext, bucket: str, key_filter: str = ">", from_revision: int = 0
) -> AsyncIterator[RawEntry]:
    feed = _Feed(js, bucket, key_filter, from_revision)
    async for entry in feed.run():
        yield entry


class _Feed:
    def __init__(self, js: JetStreamContext, bucket: str, key_filter: str, from_revision: int) -> None:
        self._js = js
        self._stream = f"KV_{bucket}"
        self._prefix = f"$KV.{bucket}."
        self._filter = self._prefix + key_filter
        self._last = from_revision
        self._synced = from_revision > 0
        self._sync_at = 0

    async def run(self) -> AsyncIterator[RawEntry]:
        failures = 0
        while True:
            try:
                async for entry in self._consume():
                    failures = 0
                    yield entry
            except Exception as exc:  # transport boundary: any NATS failure means resubscribe and resume
                failures += 1
                delay = min(0.05 * 2**failures, 2.0)
                log.info("watch.resume", stream=self._stream, after=self._last, error=repr(exc), delay_s=delay)
                await asyncio.sleep(delay)

    async def _consume(self) -> AsyncIterator[RawEntry]:
        if not self._synced and self._sync_at == 0:
            self._sync_at = (await self._js.stream_info(self._stream)).state.last_seq
        config = api.ConsumerConfig(
            ack_policy=api.AckPolicy.NONE, inactive_threshold=30.0, mem_storage=True, **self._deliver_from()
        )
        psub = await self._js.pull_subscribe(self._filter, stream=self._stream, config=config)
        try:
            if not self._synced and (await psub.consumer_info()).num_pending == 0:
                yield self._mark_synced()
            while True:
                try:
                    msgs = await psub.fetch(WATCH_BATCH, timeout=WATCH_IDLE_S)
                except TimeoutError:  # nats.errors.TimeoutError is a TimeoutError; fetch raises either
                    # Idle: check the consumer still exists (it does not survive a server restart).
                    info = await psub.consumer_info()
                    if not self._synced and info.num_pending == 0:
                        yield self._mark_synced()
                    continue
                for msg in msgs:
                    entry = self._to_entry(msg)
                    self._last = entry.revision
                    yield entry
                    if not self._synced and (entry.revision >= self._sync_at or msg.metadata.num_pending == 0):
                        yield self._mark_synced()
        finally:
            with contextlib.suppress(Exception):  # best effort: the server drops idle consumers anyway
                await asyncio.shield(psub.unsubscribe())

    def _deliver_from(self) -> dict[str, object]:
        if self._last == 0:
            return {"deliver_policy": api.DeliverPolicy.LAST_PER_SUBJECT}
        return {"deliver_policy": api.DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": self._last + 1}

    def _mark_synced(self) -> RawEntry:
        self._synced = True
        return RawEntry(WatchOp.SYNCED, max(self._last, self._sync_at))

    def _to_entry(self, msg: Msg) -> RawEntry:
        assert msg.metadata.sequence is not None
        revision = msg.metadata.sequence.stream
        key = msg.subject[len(self._prefix) :]
        if (msg.headers or {}).get(KV_OP) in (KV_DEL, KV_PURGE):
            return RawEntry(WatchOp.DELETE, revision, key)
        return RawEntry(WatchOp.PUT, revision, key, msg.data)

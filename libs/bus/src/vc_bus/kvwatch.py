"""A resumable change feed of a JetStream KV bucket (or parts of it), at the level of raw entries.

From revision 0 it first replays each key's newest value (LAST_PER_SUBJECT), then yields SYNCED once
it has reached the stream's last sequence as of the start, then follows live. After any failure
(disconnect, server restart, vanished consumer, a delivery lost in between) it opens a new consumer
from the last revision it yielded: entries arrive in sequence order, so that resume is exact.

The consumer is `pull.PullConsumer`: deliveries arrive in bulk, with no task or timer per message.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import msgspec
import structlog
from nats.js import api
from nats.js.client import JetStreamContext

from vc_bus.decoding import selected
from vc_bus.pull import RESUME_RETRY, PullConsumer, consumer_for, refused_filter
from vc_core.errors import InvalidObject
from vc_core.store import WatchOp
from vc_proto.selectors import Selector

log = structlog.get_logger(__name__)


class RawEntry(msgspec.Struct, frozen=True, gc=False):  # one per delivery: a Struct is built fastest
    op: WatchOp
    revision: int
    key: str = ""
    value: bytes = b""


def watch_bucket(
    js: JetStreamContext,
    bucket: str,
    key_filter: str | Sequence[str] = ">",
    from_revision: int = 0,
    *,
    select: Selector | None = None,
) -> AsyncIterator[RawEntry]:
    """The bucket's entries under `key_filter` after `from_revision` (see the module docstring).
    Several filters make one consumer over all of them (`filter_subjects`, nats-server 2.10 on): a
    reader of some of the pods' shards (`vc_proto.subjects.pod_shard_filter`) is sent those only.

    With `select`, a PUT whose value it refuses is yielded as a DELETE of its key (the value left the
    reader's selection, or never entered it): the cheapest place to drop what a reader never acts on,
    before any decoding, while a reader that held the key's earlier value still learns to drop it.
    """
    return _Feed(js, bucket, key_filter, from_revision, select).run()


class _Feed:
    def __init__(
        self,
        js: JetStreamContext,
        bucket: str,
        key_filter: str | Sequence[str],
        from_revision: int,
        select: Selector | None,
    ) -> None:
        self._js = js
        self._stream = f"KV_{bucket}"
        self._prefix = f"$KV.{bucket}."
        filters = [key_filter] if isinstance(key_filter, str) else list(key_filter)
        if not filters:
            raise ValueError("key_filter: at least one filter")
        self._filters = [self._prefix + f for f in filters]
        self._select = select
        self._last = from_revision
        self._synced = from_revision > 0
        self._sync_at = 0

    async def run(self) -> AsyncIterator[RawEntry]:
        failures = 0
        prefix = len(self._prefix)
        select = self._select
        while True:
            consumer: PullConsumer | None = None
            try:
                if not self._synced and self._sync_at == 0:
                    self._sync_at = (await self._js.stream_info(self._stream)).state.last_seq
                # JetStreamContext keeps its connection in `_nc`; the consumer needs the connection itself.
                consumer = consumer_for(self._js._nc, self._stream, self._config())
                if await consumer.open() == 0 and not self._synced:
                    yield self._mark_synced()
                while True:
                    for delivery in await consumer.take():
                        failures = 0
                        revision = delivery.sequence
                        self._last = revision
                        key = delivery.subject[prefix:]
                        if delivery.removed or (
                            select is not None and not selected(select, delivery.data, source=self._stream)
                        ):
                            yield RawEntry(WatchOp.DELETE, revision, key)
                        else:
                            yield RawEntry(WatchOp.PUT, revision, key, delivery.data)
                        if not self._synced and (revision >= self._sync_at or delivery.pending == 0):
                            yield self._mark_synced()
            except Exception as exc:  # transport boundary: any NATS failure means a new consumer, and resume
                if refused_filter(exc):
                    # A namespace or key that is no subject token ("a b"): no retry can succeed, so say so
                    # instead of retrying forever (found by fuzzing `vcctl podgroup list -n`).
                    shown = ", ".join(self._filters)
                    raise InvalidObject("namespace", "subject", f"no keys can match {shown!r}") from exc
                failures += 1
                delay = RESUME_RETRY.delay_s(failures)
                log.info("watch.resume", stream=self._stream, after=self._last, error=repr(exc), delay_s=delay)
                await asyncio.sleep(delay)
            finally:
                if consumer is not None:
                    await asyncio.shield(consumer.close())

    def _config(self) -> api.ConsumerConfig:
        start: dict[str, object]
        if self._last == 0:
            start = {"deliver_policy": api.DeliverPolicy.LAST_PER_SUBJECT}
        else:
            start = {"deliver_policy": api.DeliverPolicy.BY_START_SEQUENCE, "opt_start_seq": self._last + 1}
        several = len(self._filters) > 1
        return api.ConsumerConfig(
            filter_subject=None if several else self._filters[0],
            filter_subjects=self._filters if several else None,
            ack_policy=api.AckPolicy.NONE,
            inactive_threshold=30.0,
            mem_storage=True,
            **start,  # type: ignore[arg-type]
        )

    def _mark_synced(self) -> RawEntry:
        self._synced = True
        return RawEntry(WatchOp.SYNCED, max(self._last, self._sync_at))

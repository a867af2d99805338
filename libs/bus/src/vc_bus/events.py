"""The VC_EVT stream: publish domain events (de-duplicated by id), read a history, follow it live.

A follower resumes from the last sequence it yielded after any disconnect or server restart, so a
client sees every event once, in order (design: Events and history).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api
from nats.js.errors import NotFoundError
from prometheus_client import Counter

from vc_bus.decoding import decode_or_none
from vc_proto import codec, subjects
from vc_proto.events import DomainEvent

log = structlog.get_logger(__name__)

EVENTS_MAX_AGE_S = 30 * 24 * 3600
EVENTS_MAX_BYTES = 4 * 1024**3
_BATCH = 512
_event = codec.decoder(DomainEvent)
PUBLISHED = Counter("tephra_events_published_total", "History events this process published", ["outcome"])


@dataclass(frozen=True, slots=True)
class StoredEvent:
    sequence: int
    event: DomainEvent


async def ensure_events_stream(nc: Client, *, replicas: int = 1) -> None:
    js = nc.jetstream()
    config = api.StreamConfig(
        name=subjects.EVENTS_STREAM,
        subjects=[f"{subjects.EVENTS_PREFIX}.>"],
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        max_age=EVENTS_MAX_AGE_S,
        max_bytes=EVENTS_MAX_BYTES,
        duplicate_window=120,
        num_replicas=replicas,
    )
    try:
        await js.stream_info(subjects.EVENTS_STREAM)
    except NotFoundError:
        await js.add_stream(config)


def subject_for(event: DomainEvent) -> str:
    if event.job:
        return subjects.event_subject("job", event.namespace, event.job)
    return subjects.event_subject(event.kind.lower(), event.namespace, event.name)


class EventPublisher:
    def __init__(self, nc: Client) -> None:
        self._js = nc.jetstream()

    async def publish(self, event: DomainEvent) -> int:
        """Publish once: a retry with the same id inside the 2-minute window is dropped by the server."""
        ack = await self._js.publish(subject_for(event), codec.encode(event), headers={"Nats-Msg-Id": event.id})
        PUBLISHED.labels("duplicate" if ack.duplicate else "ok").inc()
        return ack.seq


async def follow(
    nc: Client, filter_subject: str, *, from_sequence: int = 1, stop_when_caught_up: bool = False
) -> AsyncIterator[StoredEvent]:
    """Events matching `filter_subject` from `from_sequence` on, in order, resuming after failures.

    Anyone can publish on an event subject: a message that is not a DomainEvent is logged, counted
    and skipped (and not read again after a resume), so a reader neither stops nor loops on it.
    """
    js = nc.jetstream()
    cursor = _Cursor(from_sequence - 1)
    failures = 0
    while True:
        try:
            async for stored in _consume(js, filter_subject, cursor, stop_when_caught_up):
                failures = 0
                yield stored
            if stop_when_caught_up:
                return
        except _CaughtUp:
            return
        except Exception as exc:  # transport boundary: resubscribe after the last sequence read
            failures += 1
            delay = min(0.05 * 2**failures, 2.0)
            log.info("events.resume", after=cursor.last, error=repr(exc), delay_s=delay)
            await asyncio.sleep(delay)


class _CaughtUp(Exception):
    pass


@dataclass(slots=True)
class _Cursor:
    last: int  # the sequence of the last message read (yielded or skipped)


async def _consume(
    js: object, filter_subject: str, cursor: _Cursor, stop_when_caught_up: bool
) -> AsyncIterator[StoredEvent]:
    config = api.ConsumerConfig(
        ack_policy=api.AckPolicy.NONE,
        inactive_threshold=30.0,
        mem_storage=True,
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=cursor.last + 1,
    )
    psub = await js.pull_subscribe(filter_subject, stream=subjects.EVENTS_STREAM, config=config)  # type: ignore[attr-defined]
    try:
        if stop_when_caught_up and (await psub.consumer_info()).num_pending == 0:
            raise _CaughtUp
        while True:
            try:
                msgs = await psub.fetch(_BATCH, timeout=1.0)
            except TimeoutError:  # nats.errors.TimeoutError is a TimeoutError; fetch raises either
                info = await psub.consumer_info()  # raises when the consumer vanished (server restart)
                if stop_when_caught_up and info.num_pending == 0:
                    raise _CaughtUp from None
                continue
            for msg in msgs:
                stored = _read(msg)
                cursor.last = msg.metadata.sequence.stream
                if stored is not None:
                    yield stored
                if stop_when_caught_up and msg.metadata.num_pending == 0:
                    raise _CaughtUp
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(psub.unsubscribe())


def _read(msg: Msg) -> StoredEvent | None:
    sequence = msg.metadata.sequence.stream
    where = {"subject": msg.subject, "sequence": sequence}
    event = decode_or_none(_event.decode, msg.data, source=subjects.EVENTS_STREAM, kind="DomainEvent", **where)
    return None if event is None else StoredEvent(sequence, event)

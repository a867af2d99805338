"""The VC_EVT stream: publish domain events (de-duplicated by id), read a history, follow it live.

A message carries one event, or a batch of events on the same subject (`EventPublisher.publish_batch`:
one JetStream write, one fsync, for what one pass of a controller produced). Readers expand a batch
into its events, in order.

A follower resumes from the last message it read after any disconnect or server restart, so a client
sees every event once, in order (design: Events and history). Resuming is at message granularity:
`follow` reads a message whole and yields all of its events before it reads the next one (a failure can
only happen while it waits for the next message), so no resume ever starts in the middle of a batch;
and a client resuming by itself from `StoredEvent.sequence + 1` resumes after the whole batch, which
`follow` had given it in full. `StoredEvent.index` tells the events of one message apart.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

import structlog
from nats.aio.client import Client
from nats.js import api
from nats.js.errors import NotFoundError
from prometheus_client import Counter

from vc_bus.buckets import while_unavailable
from vc_bus.decoding import decode_or_none
from vc_bus.pull import RESUME_RETRY, Delivery, consumer_for, refused_filter
from vc_core.errors import InvalidObject
from vc_proto import codec, subjects
from vc_proto.events import MAX_EVENTS_PER_MESSAGE, DomainEvent, EventMessage

log = structlog.get_logger(__name__)

EVENTS_MAX_AGE_S = 30 * 24 * 3600
EVENTS_MAX_BYTES = 4 * 1024**3
_message = codec.decoder(EventMessage)
PUBLISHED = Counter("tephra_events_published_total", "History events this process published", ["outcome"])
for _outcome in ("ok", "duplicate"):  # present (0) from the start: a dashboard shows 0, not "No data"
    PUBLISHED.labels(_outcome)
MESSAGES = Counter(
    "tephra_event_messages_published_total", "VC_EVT messages (one event, or a batch) this process wrote"
)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    sequence: int  # the stream sequence of the message that carried the event
    event: DomainEvent
    index: int = 0  # its place in that message (0 for a message of one event)

    @property
    def position(self) -> tuple[int, int]:
        """Where the event is in the stream: ordered, unique."""
        return self.sequence, self.index


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

    async def attempt() -> None:
        try:
            await js.stream_info(subjects.EVENTS_STREAM)
        except NotFoundError:
            await js.add_stream(config)

    await while_unavailable("the events stream", attempt)


def subject_for(event: DomainEvent) -> str:
    if event.job:
        return subjects.event_subject("job", event.namespace, event.job)
    return subjects.event_subject(event.kind.lower(), event.namespace, event.name)


def batch_id(events: Iterable[DomainEvent]) -> str:
    """The message id of a batch: derived from its events' ids, so publishing it again is a duplicate."""
    digest = hashlib.sha256("\n".join(e.id for e in events).encode()).hexdigest()
    return f"batch-{digest[:40]}"


class EventPublisher:
    def __init__(self, nc: Client, *, observer: Callable[[DomainEvent], None] | None = None) -> None:
        self._js = nc.jetstream()
        # Told of every event once it is stored (not of a retry the server dropped as a duplicate): the
        # service's Kubernetes Event recorder (vc_runtime.event_recorder). It must not block.
        self._observer = observer

    async def publish(self, event: DomainEvent) -> int:
        """Publish once: a retry with the same id inside the 2-minute window is dropped by the server."""
        return await self._publish_message([event])

    async def publish_batch(self, events: Iterable[DomainEvent]) -> None:
        """Publish `events` as one message per subject (in their order), each de-duplicated by an id
        derived from its events' ids: a retry of the same batch is dropped by the server.

        A subject's single event is published as publish() does (same wire format, same id). Messages to
        different subjects are written concurrently; it returns once every one is acknowledged.
        """
        by_subject: dict[str, list[DomainEvent]] = {}
        for event in events:
            by_subject.setdefault(subject_for(event), []).append(event)
        chunks = [
            group[start : start + MAX_EVENTS_PER_MESSAGE]
            for group in by_subject.values()
            for start in range(0, len(group), MAX_EVENTS_PER_MESSAGE)
        ]
        if len(chunks) == 1:
            await self._publish_message(chunks[0])
        elif chunks:
            await asyncio.gather(*(self._publish_message(chunk) for chunk in chunks))

    async def _publish_message(self, events: list[DomainEvent]) -> int:
        if len(events) == 1:
            payload, msg_id = codec.encode(events[0]), events[0].id
        else:
            payload, msg_id = codec.encode(events), batch_id(events)
        ack = await self._js.publish(subject_for(events[0]), payload, headers={"Nats-Msg-Id": msg_id})
        PUBLISHED.labels("duplicate" if ack.duplicate else "ok").inc(len(events))
        MESSAGES.inc()
        if self._observer is not None and not ack.duplicate:
            for event in events:
                self._observer(event)
        return ack.seq


class EventsNotPublished(RuntimeError):
    """The batch an event was waiting in was not published (its leader was cancelled or failed)."""


class EventBatcher:
    """`publish(event)` for callers that produce events one at a time but close together (a gang's binds,
    a burst of pod transitions): the events published in the same turn of the event loop as the first
    (or within `window_s` of it) go out as one `publish_batch`, so a gang's ten PodBound records are one
    write instead of ten. Replies to writes sent together often arrive together, and the coroutines they
    wake run in one turn; with an fsync per write they can also trickle in, and a caller that can afford
    it passes a window. A wait is on the path of whoever waits (a busy loop stretches any timer to its
    next turn, which can be a whole scheduling cycle away), hence `followers_wait`.

    The first caller of a window leads it: it yields the turn (or waits the window), then publishes the
    batch; the others wait for that outcome (an exception is theirs too), or, with `followers_wait`
    False (history that is best effort), return at once: then only the leader waits. No task is
    created: the leader's own call does the work. A batch's message id derives from its events' ids (so
    the same batch published again is deduplicated, not an event published again in another batch:
    callers that retry after a failure accept that history may then show it twice).
    """

    def __init__(
        self,
        publish_batch: Callable[[list[DomainEvent]], Awaitable[object]],
        *,
        window_s: float = 0.0,
        followers_wait: bool = True,
    ) -> None:
        self._publish_batch = publish_batch
        self._window_s = window_s
        self._followers_wait = followers_wait
        self._pending: list[DomainEvent] = []
        self._window: asyncio.Future[None] | None = None

    async def publish(self, event: DomainEvent) -> None:
        self._pending.append(event)
        window = self._window
        if window is not None:
            if self._followers_wait:
                await asyncio.shield(window)
            return
        window = self._window = asyncio.get_running_loop().create_future()
        try:
            await asyncio.sleep(self._window_s)
        except BaseException as exc:  # cancelled while collecting: this window's events are not published
            self._pending, self._window = [], None
            _fail(window, exc)
            raise
        batch, self._pending, self._window = self._pending, [], None
        try:
            await self._publish_batch(batch)
        except BaseException as exc:
            _fail(window, exc)
            raise
        window.set_result(None)


def _fail(window: asyncio.Future[None], exc: BaseException) -> None:
    window.set_exception(EventsNotPublished(repr(exc)))
    window.exception()  # marked retrieved: there may be nobody else waiting for it


async def follow(
    nc: Client, filter_subject: str, *, from_sequence: int = 1, stop_when_caught_up: bool = False
) -> AsyncIterator[StoredEvent]:
    """Events matching `filter_subject` from the message at `from_sequence` on, in order, resuming after
    failures (see the module docstring).

    Anyone can publish on an event subject: a message that is neither a DomainEvent nor a list of them
    is logged, counted and skipped (and not read again after a resume), so a reader neither stops nor
    loops on it.
    """
    last = from_sequence - 1  # the sequence of the last message read (yielded or skipped)
    failures = 0
    while True:
        consumer = consumer_for(nc, subjects.EVENTS_STREAM, _config(filter_subject, last + 1), batch=512)
        try:
            if await consumer.open() == 0 and stop_when_caught_up:
                return
            while True:
                for delivery in await consumer.take():
                    failures = 0
                    last = delivery.sequence
                    for stored in _read(delivery):
                        yield stored
                    if stop_when_caught_up and delivery.pending == 0:
                        return
        except Exception as exc:  # transport boundary: a new consumer after the last message read
            if refused_filter(exc):
                # A name that is no subject token ("", "a b"): no retry can succeed, so say so instead
                # of retrying forever (found by fuzzing `vcctl job history`).
                raise InvalidObject("name", "subject", f"no events can match {filter_subject!r}") from exc
            failures += 1
            delay = RESUME_RETRY.delay_s(failures)
            log.info("events.resume", after=last, error=repr(exc), delay_s=delay)
            await asyncio.sleep(delay)
        finally:
            await asyncio.shield(consumer.close())


def _config(filter_subject: str, start: int) -> api.ConsumerConfig:
    return api.ConsumerConfig(
        filter_subject=filter_subject,
        ack_policy=api.AckPolicy.NONE,
        inactive_threshold=30.0,
        mem_storage=True,
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=start,
    )


def _read(delivery: Delivery) -> list[StoredEvent]:
    sequence = delivery.sequence
    where = {"subject": delivery.subject, "sequence": sequence}
    found = decode_or_none(_message.decode, delivery.data, source=subjects.EVENTS_STREAM, kind="DomainEvent", **where)
    if found is None:
        return []
    if isinstance(found, DomainEvent):
        return [StoredEvent(sequence, found)]
    return [StoredEvent(sequence, event, index) for index, event in enumerate(found)]

"""A job's history from the VC_EVT stream: its last events (bounded), then new ones as they come.

A job of 100,000 pods has hundreds of thousands of events; a page shows the last TAIL_EVENTS. The
first of those is found without reading the others: JetStream tells how many of the job's events lie
at or after a sequence (a consumer's pending count), and a binary search over sequences finds where
the tail starts in about log2(stream length) such questions.

A message may carry a batch of events (vc_bus.events): the search counts messages, so the tail read
holds at least `keep` events; the events before it are counted one per message, a lower bound when
batches are about (`HistoryTail.exact` says which).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Final

import structlog
from nats.aio.client import Client
from nats.js import api

from vc_bus.events import StoredEvent, follow
from vc_proto import subjects

log = structlog.get_logger(__name__)

TAIL_EVENTS: Final = 2_000
READ_TIMEOUT_S: Final = 10.0


@dataclass(slots=True)
class HistoryTail:
    """The last `keep` events of a job, and how many it has in all."""

    keep: int = TAIL_EVENTS
    total: int = 0
    last_sequence: int = 0
    events: deque[StoredEvent] = field(default_factory=deque)
    complete: bool = True  # False when the read stopped early (timeout): the page says so
    exact: bool = True  # False when `total` counts unread messages that may hold several events each
    last_position: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        self.events = deque(self.events, maxlen=self.keep)

    def add(self, stored: StoredEvent) -> None:
        if stored.position <= self.last_position:
            return  # a resumed follower may deliver again what it already gave
        self.events.append(stored)
        self.last_position = stored.position
        self.last_sequence = stored.sequence
        self.total += 1


def job_subject(namespace: str, name: str) -> str:
    return subjects.event_subject("job", namespace, name)


async def read_tail(nc: Client, namespace: str, name: str, *, keep: int = TAIL_EVENTS) -> HistoryTail:
    subject = job_subject(namespace, name)
    tail = HistoryTail(keep=keep)
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            total, start = await _tail_start(nc, subject, keep)
            tail.total = max(0, total - keep)  # the messages before the tail, counted not read
            tail.exact = tail.total == 0
            async for stored in follow(nc, subject, from_sequence=start, stop_when_caught_up=True):
                tail.add(stored)
    except TimeoutError:
        tail.complete = False
        log.warning("history.read_timeout", job=f"{namespace}/{name}", read=len(tail.events))
    return tail


async def follow_after(nc: Client, namespace: str, name: str, *, after: int) -> AsyncIterator[StoredEvent]:
    """The job's events after sequence `after`, live, forever (resumes after disconnects)."""
    async for stored in follow(nc, job_subject(namespace, name), from_sequence=after + 1):
        yield stored


async def _tail_start(nc: Client, subject: str, keep: int) -> tuple[int, int]:
    """(the job's message count, the first sequence of its last `keep` messages)."""
    jsm = nc.jetstream()
    info = await jsm.stream_info(subjects.EVENTS_STREAM, subjects_filter=subject)
    total = (info.state.subjects or {}).get(subject, 0)
    first, last = info.state.first_seq, info.state.last_seq
    if total <= keep:
        return total, max(first, 1)
    low, high = first, last  # pending(low) >= keep always; find the largest such sequence
    while low < high:
        middle = (low + high + 1) // 2
        if await _pending_from(nc, subject, middle) >= keep:
            low = middle
        else:
            high = middle - 1
    return total, low


async def _pending_from(nc: Client, subject: str, sequence: int) -> int:
    js = nc.jetstream()
    config = api.ConsumerConfig(
        filter_subject=subject,
        ack_policy=api.AckPolicy.NONE,
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=sequence,
        mem_storage=True,
        inactive_threshold=5.0,
    )
    info = await js.add_consumer(subjects.EVENTS_STREAM, config)
    try:
        return int(info.num_pending or 0)
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(js.delete_consumer(subjects.EVENTS_STREAM, info.name))

"""Change notices from the watches to the open live pages (server-sent event streams).

Each stream subscribes with the topics its page shows (`Queue`, `Pod`, `job:<ns>/<name>`...). A change
sets the stream's flag; the stream wakes, renders once and sends, however many changes came meanwhile,
so a burst of 10,000 pod updates costs each stream one render per interval, not 10,000.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Iterable, Iterator
from typing import Final

from vc_dashboard.metrics import STREAMS

MAX_STREAMS: Final = 64


class Wake(enum.Enum):
    CHANGED = "changed"
    IDLE = "idle"  # nothing changed within the timeout: time for a keep-alive
    CLOSED = "closed"  # the service is stopping


class TooManyStreams(Exception):
    pass


def job_topic(namespace: str | None, name: str) -> str:
    return f"job:{namespace or ''}/{name}"


class Subscription:
    def __init__(self, topics: frozenset[str]) -> None:
        self.topics = topics
        self._changed = asyncio.Event()
        self._closed = asyncio.Event()
        self.closed = False

    def notify(self) -> None:
        self._changed.set()

    def close(self) -> None:
        self.closed = True
        self._closed.set()
        self._changed.set()

    async def pause(self, seconds: float) -> bool:
        """Sleep `seconds` (the stream's minimum interval between updates); True if closed meanwhile."""
        try:
            async with asyncio.timeout(seconds):
                await self._closed.wait()
        except TimeoutError:
            return False
        return True

    async def wait(self, seconds: float) -> Wake:
        """Until a change (or the hub's close), at most `seconds`; clears the flag."""
        try:
            async with asyncio.timeout(seconds):
                await self._changed.wait()
        except TimeoutError:
            return Wake.CLOSED if self.closed else Wake.IDLE
        self._changed.clear()
        return Wake.CLOSED if self.closed else Wake.CHANGED


class Hub:
    def __init__(self, *, max_streams: int = MAX_STREAMS) -> None:
        self._subscriptions: set[Subscription] = set()
        self._max = max_streams
        self._closed = False

    def publish(self, topics: Iterable[str]) -> None:
        changed = frozenset(topics)
        for subscription in self._subscriptions:
            if not subscription.topics.isdisjoint(changed):
                subscription.notify()

    @contextlib.contextmanager
    def subscribe(self, topics: Iterable[str]) -> Iterator[Subscription]:
        if len(self._subscriptions) >= self._max:
            raise TooManyStreams(f"{self._max} live streams are open already")
        subscription = Subscription(frozenset(topics))
        if self._closed:
            subscription.close()
        self._subscriptions.add(subscription)
        STREAMS.inc()
        try:
            yield subscription
        finally:
            self._subscriptions.discard(subscription)
            STREAMS.dec()

    def close(self) -> None:
        """End every stream (shutdown): their waits return CLOSED at once."""
        self._closed = True
        for subscription in self._subscriptions:
            subscription.close()

    @property
    def open_streams(self) -> int:
        return len(self._subscriptions)

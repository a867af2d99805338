"""The server's permission refusals, as a reader waits on them: a refused read is never answered (the
request times out and a watch would retry for ever), so a read races its own refusal instead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from nats.protocol.parser import PERMISSIONS_ERR

from vc_cli.tenancy import describe_refusal
from vc_core.errors import PolicyViolation

T = TypeVar("T")
Matches = Callable[[str], bool]


class ReadRefused(PolicyViolation):
    """The server refused this identity a read (another tenant's namespace, say)."""


class Refusals:
    def __init__(self, identity: str, namespaces: frozenset[str] | None) -> None:
        self._identity = identity
        self._namespaces = namespaces
        self._seen: list[str] = []
        self._changed = asyncio.Event()

    def note(self, error: Exception) -> None:
        """The connection's error observer: keeps the permission violations."""
        text = str(error)
        if PERMISSIONS_ERR in text.lower():
            self._seen.append(text.lower())
            self._changed.set()

    async def wait(self, matches: Matches, *, after: int = 0) -> ReadRefused:
        """The first refusal `matches` accepts among those noted after the first `after`."""
        checked = after
        while True:
            for text in self._seen[checked:]:
                if matches(text):
                    return ReadRefused(describe_refusal(text, self._identity, self._namespaces))
            checked = len(self._seen)
            self._changed.clear()
            await self._changed.wait()

    async def call(self, work: Awaitable[T], matches: Matches) -> T:
        """`work`'s result, or ReadRefused as soon as the server refuses what it asked. Both tasks are
        this call's own: whichever loses the race is cancelled and awaited before it returns."""
        refused = asyncio.ensure_future(self.wait(matches, after=len(self._seen)))
        task = asyncio.ensure_future(work)
        try:
            await asyncio.wait((task, refused), return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                return task.result()
            raise refused.result()
        finally:
            for pending in (task, refused):
                if not pending.done():
                    pending.cancel()
            await asyncio.gather(task, refused, return_exceptions=True)

    async def guard(self, items: AsyncIterator[T], matches: Matches) -> AsyncIterator[T]:
        """`items`, ending with ReadRefused as soon as the server refuses what they need."""
        iterator = aiter(items)
        try:
            while True:
                try:
                    yield await self.call(anext(iterator), matches)
                except StopAsyncIteration:
                    return
        finally:
            await iterator.aclose()  # type: ignore[attr-defined]


def read_of(stream: str, namespace: str | None) -> Matches:
    """A refusal of a consumer or a get on `stream`, in `namespace` (any, when None)."""
    stream = stream.lower()

    def matches(text: str) -> bool:
        on_stream = f"consumer.create.{stream}." in text or f"direct.get.{stream}." in text
        return on_stream and (namespace is None or f".{namespace.lower()}." in text)

    return matches

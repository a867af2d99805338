"""Small asyncio helpers for workers that must stop intake promptly on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def until(shutdown: asyncio.Event, source: AsyncIterator[T]) -> AsyncIterator[T]:
    """Items of `source` until it ends or `shutdown` is set, whichever comes first.

    The two helper tasks are owned here and cancelled in `finally` (a TaskGroup cannot span the
    `yield` of an async generator safely, PEP 789).
    """
    stop = asyncio.ensure_future(shutdown.wait())
    nxt: asyncio.Future[tuple[bool, T | None]] | None = None
    try:
        while True:
            nxt = asyncio.ensure_future(_next(source))
            await asyncio.wait({nxt, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not nxt.done():
                return
            done, item = nxt.result()
            nxt = None
            if done:
                return
            yield item  # type: ignore[misc]
    finally:
        stop.cancel()
        if nxt is not None:
            nxt.cancel()
            with contextlib.suppress(BaseException):
                await nxt
        with contextlib.suppress(Exception):
            await source.aclose()  # type: ignore[attr-defined]


async def _next(source: AsyncIterator[T]) -> tuple[bool, T | None]:
    try:
        return False, await anext(source)
    except StopAsyncIteration:
        return True, None


async def wait_or_stop(event: asyncio.Event, shutdown: asyncio.Event) -> bool:
    """Wait for `event`; False if `shutdown` came first."""
    if event.is_set():
        return True
    async with asyncio.TaskGroup() as tg:
        got = tg.create_task(event.wait())
        stop = tg.create_task(shutdown.wait())
        await asyncio.wait({got, stop}, return_when=asyncio.FIRST_COMPLETED)
        got.cancel()
        stop.cancel()
    return event.is_set()


async def sleep_or_stop(shutdown: asyncio.Event, seconds: float) -> bool:
    """Sleep; True if `shutdown` was set meanwhile."""
    try:
        async with asyncio.timeout(seconds):
            await shutdown.wait()
    except TimeoutError:
        return False
    return True

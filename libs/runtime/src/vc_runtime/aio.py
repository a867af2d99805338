"""Small asyncio helpers for workers that must stop intake promptly on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def until(shutdown: asyncio.Event, source: AsyncIterator[T]) -> AsyncIterator[T]:
    """Items of `source` until it ends or `shutdown` is set, whichever comes first.

    A watch yields thousands of items a second, so nothing here is per item but one `await`: a single
    helper task waits for `shutdown` and, if the reader is then waiting inside `source`, cancels the
    reader's task there (and only there: never while the reader handles an item). That cancellation is
    taken back (`uncancel`) and ends the iteration; any other cancellation propagates. The helper is
    owned here and cancelled in `finally` (a TaskGroup cannot span the `yield` of an async generator
    safely, PEP 789).
    """
    reader = asyncio.current_task()
    assert reader is not None
    inside = False  # the reader is awaiting the next item
    stopped = False  # we cancelled the reader for the shutdown

    def on_shutdown(_: object) -> None:
        nonlocal stopped
        if inside and not stopped:
            stopped = True
            reader.cancel()

    watcher = asyncio.ensure_future(shutdown.wait())
    watcher.add_done_callback(on_shutdown)
    try:
        while not shutdown.is_set():
            inside = True
            try:
                item = await anext(source)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if stopped and reader.uncancel() == 0:
                    return
                raise
            finally:
                inside = False
            if stopped:  # the item came in the same turn as the cancellation: it is not taken back
                reader.uncancel()
                return
            yield item
    finally:
        watcher.remove_done_callback(on_shutdown)
        watcher.cancel()
        with contextlib.suppress(Exception):
            await source.aclose()  # type: ignore[attr-defined]


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

"""Submit every key again when ownership may have moved: at sync, on membership changes, and on a
short period (a joining member claims its keys only after a settle delay, which no event announces)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from vc_runtime.aio import sleep_or_stop

from vc_gc.sharding import Ownership

RESYNC_PERIOD_S = 2.0


async def wait_synced(synced: Callable[[], bool], shutdown: asyncio.Event) -> bool:
    """Until every cache has synced; False if shutdown came first."""
    while not synced():
        if await sleep_or_stop(shutdown, 0.02):
            return False
    return True


async def resync_forever(
    submit_all: Callable[[], None], ownership: Ownership, shutdown: asyncio.Event, *, period_s: float = RESYNC_PERIOD_S
) -> None:
    while not shutdown.is_set():
        submit_all()
        try:
            async with asyncio.timeout(period_s):
                await _first(ownership.wait_changed(), shutdown.wait())
        except TimeoutError:
            pass


async def _first(*waits: object) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]  # type: ignore[call-overload]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

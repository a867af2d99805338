"""Submit every key again when ownership may have moved: at sync, on each membership change, and then
on a period that starts short and doubles (a member claims its keys only after a settle delay, which
no event announces; later passes are the informer-style periodic resync that heals missed hints)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from vc_runtime.aio import sleep_or_stop
from vc_runtime.sharding import Ownership

FIRST_PERIOD_S = 0.5
MAX_PERIOD_S = 30.0


async def wait_synced(synced: Callable[[], bool], shutdown: asyncio.Event) -> bool:
    """Until every cache has synced; False if shutdown came first."""
    while not synced():
        if await sleep_or_stop(shutdown, 0.02):
            return False
    return True


async def resync_forever(
    submit_all: Callable[[], None],
    ownership: Ownership,
    shutdown: asyncio.Event,
    *,
    first_period_s: float = FIRST_PERIOD_S,
    max_period_s: float = MAX_PERIOD_S,
) -> None:
    period = first_period_s
    while not shutdown.is_set():
        submit_all()
        try:
            async with asyncio.timeout(period):
                await _first(ownership.wait_changed(), shutdown.wait())
            period = first_period_s  # membership changed: passes come quickly again for a while
        except TimeoutError:
            period = min(period * 2, max_period_s)


async def _first(*waits: object) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]  # type: ignore[call-overload]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

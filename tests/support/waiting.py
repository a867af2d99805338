"""Waiting in tests: on a condition, never for a fixed time. On a loaded machine a fixed sleep is either too
short (a flaky test) or wasted (a slow one); a polled condition with a generous bound is neither."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable


async def eventually(
    check: Callable[[], Awaitable[bool] | bool],
    *,
    timeout: float = 30.0,  # noqa: ASYNC109 - the bound of the poll is this helper's whole subject
    interval: float = 0.1,
    what: str = "condition",
) -> None:
    """Poll `check` (plain or async) until it holds; after `timeout` seconds fail with an AssertionError
    naming `what`. The bound is generous on purpose: it says "this happens", not how fast."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = check()
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s")
        await asyncio.sleep(interval)

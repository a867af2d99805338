"""Deadlines per key on the monotonic clock, handed to the dispatcher as delayed submissions.

Only the earliest pending deadline of a key is kept: an object re-seen a hundred times before its
deadline (gc: a job's TTL; flow-controller: a CronJob's next run) still costs one timer. The deadline
itself is never trusted: the handler re-checks (re-reads the clock) on firing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class Timers(Generic[K]):
    def __init__(self, submit_after: Callable[[K, float], None]) -> None:
        self._submit_after = submit_after
        self._armed: dict[K, float] = {}

    def arm(self, key: K, delay_s: float) -> None:
        now = asyncio.get_running_loop().time()
        at = now + max(0.0, delay_s)
        current = self._armed.get(key)
        if current is not None and now < current <= at:
            return  # an earlier (or equal) timer is already pending; its pass re-arms if needed
        self._armed[key] = at
        self._submit_after(key, delay_s)

    def prune(self) -> None:
        """Forget fired timers (called from the resync loop, so the map stays bounded)."""
        now = asyncio.get_running_loop().time()
        self._armed = {key: at for key, at in self._armed.items() if at > now}

"""The one retry policy every retrying loop uses: which errors it retries, how long it waits between tries
(capped exponential backoff with jitter), and when it gives up (a number of tries, a deadline, or never).

Pure: `RetryPolicy.call` awaits the `sleep` it is given (the shell passes asyncio.sleep), and loops that
run for as long as their service does (watches, relays) take only `delay_s` from it. Jitter spreads the
retries of many instances that failed together (a server restart) so they do not return in one burst.
A loop retries at one level only: an operation retried here is not retried again by its caller's policy.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
# 2.0 ** 1024 does not fit a float: past this many doublings every wait is at its cap anyway (a loop
# retrying through a long outage counts past a thousand failures).
_MAX_DOUBLINGS = 64

OnRetry = Callable[[BaseException, int, float], None]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry errors of the classes in `retry_on` but not in `never` (a subclass that no retry can mend);
    wait `base_s` after the first failure, doubling up to `cap_s`, each wait shortened by a random part of
    at most `jitter` of it; give up after `attempts` tries or once the next try would start later than
    `deadline_s` after the first (None: no limit)."""

    retry_on: tuple[type[BaseException], ...]
    base_s: float
    cap_s: float
    attempts: int | None = None
    deadline_s: float | None = None
    jitter: float = 0.2
    never: tuple[type[BaseException], ...] = ()

    def __post_init__(self) -> None:
        if not self.retry_on:
            raise ValueError("retry_on: name at least one error class to retry")
        if not 0 < self.base_s <= self.cap_s:
            raise ValueError(f"base_s, cap_s: need 0 < base_s <= cap_s, got {self.base_s} and {self.cap_s}")
        if not 0 <= self.jitter < 1:
            raise ValueError(f"jitter: a fraction in [0, 1), got {self.jitter}")
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"attempts: at least 1, got {self.attempts}")
        if self.deadline_s is not None and self.deadline_s <= 0:
            raise ValueError(f"deadline_s: positive, got {self.deadline_s}")

    def delay_s(self, failures: int, draw: float | None = None) -> float:
        """The wait after `failures` failures in a row (1, 2, ...): `base_s` doubled `failures - 1` times,
        at most `cap_s`, less `jitter * draw` of it (`draw` in [0, 1); random when not given)."""
        full = min(self.base_s * 2.0 ** min(max(failures - 1, 0), _MAX_DOUBLINGS), self.cap_s)
        return full * (1.0 - self.jitter * (random.random() if draw is None else draw))

    def next_delay(
        self, error: BaseException, failures: int, elapsed_s: float, draw: float | None = None
    ) -> float | None:
        """The wait before the next try after `error`, the `failures`-th in a row, `elapsed_s` after the
        first try began; None when the policy gives up (not an error it retries, tries spent, or the
        next try would start past the deadline)."""
        if not isinstance(error, self.retry_on) or isinstance(error, self.never):
            return None
        if self.attempts is not None and failures >= self.attempts:
            return None
        delay = self.delay_s(failures, draw)
        if self.deadline_s is not None and elapsed_s + delay > self.deadline_s:
            return None
        return delay

    async def call(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        sleep: Callable[[float], Awaitable[object]],
        on_retry: OnRetry | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> T:
        """`attempt()`'s result, trying again as the policy says; the last error when it gives up.
        `on_retry(error, failures, delay_s)` is told of each retry before its wait (to log it)."""
        started = clock()
        failures = 0
        while True:
            try:
                return await attempt()
            except self.retry_on as error:
                failures += 1
                delay = self.next_delay(error, failures, clock() - started)
                if delay is None:
                    raise
                if on_retry is not None:
                    on_retry(error, failures, delay)
            await sleep(delay)

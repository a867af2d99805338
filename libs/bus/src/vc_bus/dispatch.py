"""Per-key serial work: one key is never handled by two workers at once; different keys run in parallel.

Like client-go's work queue: submitting a key that is already waiting is a no-op (level-triggered
handlers re-read state, so one pass covers every hint), and a key submitted while it is being handled
runs once more afterwards. Failures are retried with a capped exponential backoff per key.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog

from vc_bus import workqueue_metrics
from vc_core.errors import PermanentError, TemporaryError
from vc_core.retry import RetryPolicy

K = TypeVar("K", bound=Hashable)
log = structlog.get_logger(__name__)

BASE_DELAY_S = 0.005
MAX_DELAY_S = 60.0
# A key whose handler failed (any error: the handler boundary) runs again for as long as the dispatcher
# does, each key counting its own failures.
KEY_RETRY = RetryPolicy((Exception,), base_s=BASE_DELAY_S, cap_s=MAX_DELAY_S)


def backoff_s(attempt: int) -> float:
    """The wait before retry number `attempt` (1, 2, ...): doubling from BASE_DELAY_S, capped at
    MAX_DELAY_S (less KEY_RETRY's jitter), however many attempts (a job-controller key failing through
    an apiserver outage reached attempt 1,025, and 2 ** 1,024 overflowed a float)."""
    return KEY_RETRY.delay_s(attempt)


@dataclass(frozen=True, slots=True)
class DispatcherStats:
    waiting: int
    active: int
    delayed: int
    handled: int
    failed: int


class KeyedDispatcher(Generic[K]):
    def __init__(self, handler: Callable[[K], Awaitable[None]], *, workers: int = 8, name: str = "dispatcher") -> None:
        self._handler = handler
        self._workers = workers
        self._name = name
        self._queue: asyncio.Queue[K] = asyncio.Queue()
        self._waiting: set[K] = set()
        self._active: set[K] = set()
        self._dirty: set[K] = set()
        self._failures: dict[K, int] = {}
        self._delayed: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        self._wake = asyncio.Event()
        self._handled = 0
        self._failed = 0
        self._idle = asyncio.Event()
        self._idle.set()
        workqueue_metrics.track(self)  # its depth on /metrics

    @property
    def name(self) -> str:
        return self._name

    def submit(self, key: K) -> None:
        """Ask for `key` to be handled (soon, once, not concurrently with itself)."""
        if key in self._active:
            self._dirty.add(key)
            return
        if key in self._waiting:
            return
        self._waiting.add(key)
        self._idle.clear()
        self._queue.put_nowait(key)

    def submit_after(self, key: K, delay_s: float) -> None:
        loop = asyncio.get_running_loop()
        heapq.heappush(self._delayed, (loop.time() + max(0.0, delay_s), next(self._seq), key))
        self._idle.clear()
        self._wake.set()

    def statistics(self) -> DispatcherStats:
        return DispatcherStats(len(self._waiting), len(self._active), len(self._delayed), self._handled, self._failed)

    async def wait_idle(self) -> None:
        """Until nothing is waiting, running or delayed (for tests and graceful stops)."""
        await self._idle.wait()

    async def run(self, shutdown: asyncio.Event) -> None:
        """Work until `shutdown`; the in-flight handlers finish, waiting keys are left (they are hints)."""
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self._timer(shutdown), name=f"{self._name}:timer")
            for i in range(self._workers):
                tg.create_task(self._worker(shutdown), name=f"{self._name}:worker-{i}")

    async def _timer(self, shutdown: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not shutdown.is_set():
            while self._delayed and self._delayed[0][0] <= loop.time():
                _, _, key = heapq.heappop(self._delayed)
                self.submit(key)
            self._update_idle()
            timeout = (self._delayed[0][0] - loop.time()) if self._delayed else 0.5
            self._wake.clear()
            try:
                async with asyncio.timeout(max(0.0, min(timeout, 0.5))):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _worker(self, shutdown: asyncio.Event) -> None:
        while not shutdown.is_set():
            try:
                async with asyncio.timeout(0.5):
                    key = await self._queue.get()
            except TimeoutError:
                continue
            self._waiting.discard(key)
            self._active.add(key)
            try:
                await self._handle(key)
            finally:
                self._active.discard(key)
                if key in self._dirty:
                    self._dirty.discard(key)
                    self.submit(key)
                self._update_idle()

    async def _handle(self, key: K) -> None:
        try:
            await self._handler(key)
        except TemporaryError as exc:
            self._retry(key, exc.delay, exc)
        except PermanentError as exc:
            self._failed += 1
            self._failures.pop(key, None)
            log.error("dispatch.permanent_error", dispatcher=self._name, key=str(key), error=str(exc))
        except Exception as exc:  # handler boundary: log and retry with backoff, never kill the worker
            self._retry(key, None, exc)
            log.error("dispatch.handler_failed", dispatcher=self._name, key=str(key), exc_info=exc)
        else:
            self._handled += 1
            self._failures.pop(key, None)

    def _retry(self, key: K, delay: float | None, exc: BaseException) -> None:
        self._failed += 1
        attempt = self._failures.get(key, 0) + 1
        self._failures[key] = attempt
        backoff = backoff_s(attempt)
        self.submit_after(
            key, backoff if delay is None else max(delay, backoff if delay == 0 and attempt > 3 else delay)
        )
        log.info("dispatch.retry", dispatcher=self._name, key=str(key), attempt=attempt, error=str(exc))

    def _update_idle(self) -> None:
        if not self._waiting and not self._active and not self._delayed and not self._dirty:
            self._idle.set()

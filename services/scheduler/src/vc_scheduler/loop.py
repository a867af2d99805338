"""SHELL: the scheduling loop. Every --schedule-period, or early when work arrives, snapshot the
cache, run one cycle in a worker thread (the core is pure and the snapshot immutable), assume its
binds and hand every decision to the dispatcher."""

from __future__ import annotations

import asyncio
import itertools
import time
from datetime import UTC, datetime

import structlog
from prometheus_client import Counter, Histogram

from vc_scheduler.cache import SchedulerCache
from vc_scheduler.cycle import CycleResult, run_cycle
from vc_scheduler.dispatch import Dispatcher
from vc_scheduler.framework.conf import SchedulerConf
from vc_scheduler.framework.decisions import Bind

log = structlog.get_logger(__name__)
E2E = Histogram("volcano_e2e_scheduling_latency_milliseconds", "E2E scheduling latency (ms)",
                buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000))
ACTION = Histogram("volcano_action_scheduling_latency_milliseconds", "Action latency (ms)", ["action"],
                   buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000))
ATTEMPTS = Counter("volcano_schedule_attempts_total", "Scheduling attempts by result", ["result"])
MIN_GAP_S = 0.05


class SchedulingLoop:
    def __init__(self, cache: SchedulerCache, dispatcher: Dispatcher, conf: SchedulerConf, *, period_s: float, instance: str) -> None:
        self.cache = cache
        self.dispatcher = dispatcher
        self.conf = conf
        self.period_s = period_s
        self.instance = instance
        self.cycles = itertools.count(1)
        self.last: CycleResult | None = None

    async def run(self, shutdown: asyncio.Event) -> None:
        while not shutdown.is_set():
            started = time.monotonic()
            self.cache.changed.clear()
            await self.run_once()
            await self._wait_for_work(shutdown, started)

    async def run_once(self) -> CycleResult:
        snapshot = self.cache.snapshot()
        cycle = next(self.cycles)
        result = await asyncio.to_thread(
            run_cycle, snapshot, self.conf, now=datetime.now(UTC), session_uid=f"{self.instance}-{cycle}"
        )
        self.last = result
        self._record(result)
        for decision in result.decisions:
            if isinstance(decision, Bind):
                self.cache.assume(decision.pod, decision.node)
            self.dispatcher.submit(decision)
        for update in result.podgroups.values():
            self.dispatcher.submit(update)
        if result.decisions:
            log.info("cycle.finished", cycle=cycle, binds=len(result.binds), evictions=len(result.evictions),
                     pending=result.stats.tasks_pending, duration_ms=round(result.stats.duration_s * 1000, 1))
        return result

    def _record(self, result: CycleResult) -> None:
        E2E.observe(result.stats.duration_s * 1000)
        for name, seconds in result.stats.durations_s.items():
            if name.startswith("action:"):
                ACTION.labels(name.removeprefix("action:")).observe(seconds * 1000)
        binds = len(result.binds)
        ATTEMPTS.labels("scheduled").inc(binds)
        ATTEMPTS.labels("unschedulable").inc(max(0, result.stats.tasks_pending - binds))

    async def _wait_for_work(self, shutdown: asyncio.Event, started: float) -> None:
        """Sleep until the period is over, or earlier (but not busier than MIN_GAP_S) when objects change."""
        await asyncio.sleep(MIN_GAP_S)
        deadline = started + self.period_s
        while not shutdown.is_set() and time.monotonic() < deadline:
            if self.cache.changed.is_set():
                return
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await self.cache.changed.wait()
            except TimeoutError:
                return

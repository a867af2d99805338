"""Wiring of the scheduler service: cache watches, the loop, the dispatcher."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from pathlib import Path

from vc_core.errors import ConfigError, InvalidObject
from vc_runtime.aio import wait_or_stop
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings
from vc_scheduler.cache import KINDS, SchedulerCache
from vc_scheduler.cycle import load_scheduler_conf
from vc_scheduler.dispatch import Dispatcher
from vc_scheduler.loop import SchedulingLoop


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler-conf", help="Volcano scheduler configuration YAML (default: Volcano's default)")
    parser.add_argument("--schedule-period", type=float, default=1.0, help="seconds between cycles")


class SchedulerApp:
    name = "scheduler"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings
        path = settings.extra.get("scheduler_conf")
        try:
            self.conf = load_scheduler_conf(Path(str(path)).read_text() if path else None)
        except (OSError, InvalidObject, ValueError) as exc:
            raise ConfigError(f"--scheduler-conf: {exc}") from exc
        self.period_s = float(settings.extra.get("schedule_period", 1.0))  # type: ignore[arg-type]

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        cache = SchedulerCache()
        source = f"scheduler/{self.settings.instance}"
        dispatcher = Dispatcher(ctx.store, cache, ctx.events.publish, source=source)
        loop = SchedulingLoop(cache, dispatcher, self.conf, period_s=self.period_s, instance=self.settings.instance)
        js = ctx.nc.jetstream()
        ctx.probes.require("cache-synced")

        async def schedule(shutdown: asyncio.Event) -> None:
            for kind in KINDS:
                if not await wait_or_stop(cache.synced[kind], shutdown):
                    return
            ctx.probes.set("cache-synced")
            await loop.run(shutdown)

        return [
            *(FnWorker(f"cache:{kind}", lambda s, k=kind: cache.follow(js, k, s)) for kind in KINDS),
            FnWorker("loop", schedule),
            FnWorker("dispatcher", dispatcher.run),
        ]

"""A service whose one worker waits on a computation in a worker thread that outlasts any grace period,
as the scheduler's does on a planning cycle at scale (`asyncio.to_thread`). Run as a process by the
shutdown tests: `python -m tests.support.computing_service --nats URL ...` (the gc identity suffices).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from vc_runtime.service import FnWorker, ServiceContext, Worker, main_entry
from vc_runtime.settings import RuntimeSettings, parse

COMPUTE_S = 600.0


class ComputingApp:
    name = "gc"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        async def plan(shutdown: asyncio.Event) -> None:
            # A thread cannot be cancelled: cancelling this await leaves the computation running on.
            await asyncio.to_thread(time.sleep, COMPUTE_S)

        return [FnWorker("plan", plan)]


if __name__ == "__main__":
    main_entry(ComputingApp, lambda: parse("gc"))

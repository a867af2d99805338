"""A Kubelet following its store and running its timers for the length of a test's block."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from vc_node_sim.kubelet import Kubelet


@contextlib.asynccontextmanager
async def running(kubelet: Kubelet) -> AsyncIterator[Kubelet]:
    shutdown = asyncio.Event()
    tasks = [asyncio.create_task(kubelet.follow_pods(shutdown)), asyncio.create_task(kubelet.run_timers(shutdown))]
    try:
        yield kubelet
    finally:
        shutdown.set()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

"""A KeyedDispatcher's depth on /metrics (vc_bus.workqueue_metrics): read from the live dispatchers at
scrape time, summed by name, gone with the dispatcher."""

from __future__ import annotations

import asyncio
import gc

from prometheus_client import REGISTRY

from vc_bus.dispatch import KeyedDispatcher


def sample(name: str, queue: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"name": queue})


async def test_depth_is_the_keys_waiting_summed_by_name_and_handled_keys_are_counted() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def handle(key: str) -> None:
        started.set()
        await release.wait()

    first = KeyedDispatcher(handle, workers=1, name="wq-test")
    second = KeyedDispatcher(handle, workers=1, name="wq-test")
    for key in ("a", "b", "a"):  # a key already waiting is not queued twice
        first.submit(key)
    second.submit("c")
    assert sample("workqueue_depth", "wq-test") == 3
    shutdown = asyncio.Event()
    runner = asyncio.create_task(first.run(shutdown))
    await started.wait()
    assert sample("workqueue_depth", "wq-test") == 2  # b and c wait; a is being handled
    assert sample("tephra_workqueue_active", "wq-test") == 1
    release.set()
    await first.wait_idle()
    assert sample("tephra_workqueue_handled_total", "wq-test") == 2
    assert sample("workqueue_depth", "wq-test") == 1  # c, on the dispatcher nobody runs
    shutdown.set()
    await runner
    del first, second, runner
    gc.collect()
    assert sample("workqueue_depth", "wq-test") is None  # dispatchers that are gone are not reported

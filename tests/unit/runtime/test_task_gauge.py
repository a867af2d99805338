"""`tephra_asyncio_tasks`: every service's /metrics says how many asyncio tasks it holds (the soak's leak check)."""

from __future__ import annotations

import asyncio
import re
import urllib.request

from vc_bus.server import free_port
from vc_runtime.probes import Probes, serve_probes


def tasks_gauge(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    match = re.search(r"^tephra_asyncio_tasks (\S+)$", text, re.M)
    assert match is not None, text[:2000]
    return float(match.group(1))


async def test_metrics_count_the_tasks_alive_when_read() -> None:
    port, started, release = free_port(), asyncio.Event(), asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        server = tg.create_task(serve_probes(Probes(), host="127.0.0.1", port=port, started=started), name="probes")
        await started.wait()
        before = await asyncio.to_thread(tasks_gauge, port)
        extra = [tg.create_task(release.wait(), name=f"idle:{i}") for i in range(5)]
        during = await asyncio.to_thread(tasks_gauge, port)
        release.set()
        await asyncio.gather(*extra)
        after = await asyncio.to_thread(tasks_gauge, port)
        server.cancel()
    assert before >= 2  # this test and the server, at least
    assert during == before + 5
    assert after == before

"""After a surface was fuzzed: every service is still up and still does good work."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import msgspec
from nats.aio.client import Client

from tests.support.services import ServiceProcess
from tests.support.system import System
from vc_proto import subjects

T = TypeVar("T")
IN_FLIGHT = 16
GOOD_QUEUE = "fuzz-good"


async def each(inputs: Iterable[T], handle: Callable[[T], Awaitable[None]]) -> None:
    """`handle` every input, IN_FLIGHT at a time."""
    slots = asyncio.Semaphore(IN_FLIGHT)

    async def one(item: T) -> None:
        try:
            await handle(item)
        finally:
            slots.release()

    async with asyncio.TaskGroup() as tg:
        for item in inputs:
            await slots.acquire()  # no more than IN_FLIGHT tasks at once
            tg.create_task(one(item))


def metric(service: ServiceProcess, name: str, **labels: str) -> float:
    """The sum of one metric's samples on the service's /metrics that carry `labels` (0 when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{service.health_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}(?:\{{(.*)\}})? (\S+)$", line)
        if match and wanted <= set((match.group(1) or "").split(",")):
            total += float(match.group(2))
    return total


def assert_alive(services: Iterable[ServiceProcess]) -> None:
    for service in services:
        died = f"{service.binary} died: {service.log_text()[-3000:]}"
        assert service.proc is not None and service.proc.poll() is None, died
        assert service.ready(), f"{service.binary} is not ready: {service.log_text()[-3000:]}"


def good_job(name: str) -> dict[str, object]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    template = {
        "metadata": {"annotations": {"sim.tephra.dev/duration": "1s"}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "queue": GOOD_QUEUE,
            "minAvailable": 2,
            "tasks": [{"name": "work", "replicas": 2, "template": template}],
        },
    }


async def good_work_is_still_done(system: System, nc: Client) -> None:
    """Every service alive and ready, and a 2-pod gang job submitted through vcctl completes (in a queue of
    its own: fuzzed writes may have closed or capped the others)."""
    assert_alive(system.services.values())
    for i in range(system.nodes):  # fuzzed control requests may have left nodes NotReady: what an operator would undo
        reply = await nc.request(
            subjects.NODE_SIM_CONTROL, msgspec.json.encode({"node": f"node-{i}", "ready": True}), timeout=10
        )
        assert msgspec.json.decode(reply.data) == {"ok": True}, reply.data
    created = await asyncio.to_thread(system.vcctl, "queue", "create", "-n", GOOD_QUEUE, "-w", "1")
    assert created.returncode == 0, created.stderr
    await system.apply(good_job("fuzz-good"))
    await system.wait_phase("fuzz-good", "Completed", timeout=120)
    assert_alive(system.services.values())

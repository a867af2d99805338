"""Kubernetes Events in the whole embedded system: a job that does not fit gets
one Unschedulable Event with the why-message on its PodGroup and one PodGroupPending on the Job, not
one per scheduling cycle, not again after the scheduler restarts; `vcctl job view` shows it once."""

from __future__ import annotations

import asyncio
import re
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.services import ServiceProcess, eventually
from tests.support.system import System, start_system
from vc_bus.connection import connect
from vc_cli.client import Tephra
from vc_proto import api
from vc_proto.kube_event import Event

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.timeout(300)]

JOB = "too-big"
_CYCLES = re.compile(rb"^volcano_e2e_scheduling_latency_milliseconds_count (\S+)$", re.MULTILINE)


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    running = await start_system(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def too_big() -> dict[str, object]:
    """Two pods of 1000 CPUs each on 32-CPU nodes: the gang never fits."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1000", "memory": "1Gi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": JOB},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": 2,
            "tasks": [{"name": "worker", "replicas": 2, "template": {"spec": {"containers": [container]}}}],
        },
    }


async def events(system: System) -> list[Event]:
    items, _ = await system.store_call(lambda s: s.list(Event, "default"))
    return items


def about(found: list[Event], kind: str, reason: str) -> list[Event]:
    return [e for e in found if e.involved_object and e.involved_object.kind == kind and e.reason == reason]


async def cycles(scheduler: ServiceProcess) -> float:
    def scrape() -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{scheduler.health_port}/metrics", timeout=5) as response:
            match = _CYCLES.search(response.read())
        return float(match.group(1)) if match else 0.0

    return await asyncio.to_thread(scrape)


async def after_more_cycles(system: System, tag: str, more: int = 4) -> None:
    """An idle scheduler skips cycles that would repeat the last one: a new queue makes it run a cycle,
    deciding the big job's verdict again (and the same: a queue adds nothing to the cluster); one queue
    after another's cycle, `more` times. The queues go through admission as `vcctl queue create` sends
    them, from this process (a vcctl process costs about a second of CPU)."""
    scheduler = system.services["scheduler"]
    async with connect(system.url, name="test") as nc:
        tephra = Tephra(nc)
        for i in range(more):
            start = await cycles(scheduler)
            queue = {"metadata": {"name": f"churn-{tag}-{i}"}, "spec": {"weight": 1}}
            await tephra.submit(api.Create, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", **queue})

            async def ran(start: float = start) -> bool:
                return await cycles(scheduler) > start

            await eventually(ran, timeout=90)


async def test_a_job_that_does_not_fit_gets_one_unschedulable_event_with_the_why(system: System) -> None:
    await system.apply(too_big())

    async def why_said() -> bool:
        found = about(await events(system), "PodGroup", "Unschedulable")
        return bool(found) and "cpu" in (found[0].message or "")

    await eventually(why_said, timeout=60)
    await after_more_cycles(system, "a")  # the verdict stands, cycle after cycle
    found = await events(system)
    (unschedulable,) = about(found, "PodGroup", "Unschedulable")
    (pending,) = about(found, "Job", "PodGroupPending")
    assert unschedulable.type == "Warning"
    assert unschedulable.message is not None and "tasks in gang unschedulable" in unschedulable.message
    assert "overused cpu" in unschedulable.message  # the why: the gang's 2000 CPUs exceed the cluster
    assert pending.message == f"PodGroup default:{JOB} unschedulable, reason: {unschedulable.message}"
    job = await system.job(JOB)
    assert pending.involved_object is not None and pending.involved_object.uid == job.metadata.uid
    await after_more_cycles(system, "b")
    (still,) = about(await events(system), "PodGroup", "Unschedulable")
    assert (still.metadata.name, still.count, still.message) == (
        unschedulable.metadata.name,
        unschedulable.count,
        unschedulable.message,
    )  # not counted once per cycle

    # A restarted scheduler finds the verdict already stored: nothing is said again.
    scheduler = system.services["scheduler"]
    scheduler.terminate()
    scheduler.start()
    await scheduler.wait_ready(timeout=60)
    await after_more_cycles(system, "c")
    again = await events(system)
    assert [(e.metadata.name, e.count) for e in about(again, "PodGroup", "Unschedulable")] == [
        (unschedulable.metadata.name, unschedulable.count)
    ]
    assert len(about(again, "Job", "PodGroupPending")) == 1

    view = system.vcctl("job", "view", "-N", JOB)
    assert view.returncode == 0, view.stderr
    section = view.stdout.partition("\nEvents:")[2].splitlines()
    lines = [line for line in section if "Unschedulable" in line and "gang unschedulable" in line]
    assert len(lines) == 1, view.stdout  # once: the Event, not the history line saying the same
    assert "overused cpu" in lines[0] and "vc-scheduler" in lines[0]
    assert any("PodGroupPending" in line and "vc-scheduler" in line for line in section), view.stdout

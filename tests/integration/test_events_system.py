"""`vcctl events` and the example consumer on the whole embedded system: a gang's events printed by a
watch started before the gang existed, in every output format, and its durations written as CSV."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.system import BIN, System, start_system
from tests.support.waiting import eventually
from vc_core.times import parse_rfc3339

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "job_stats.py"
GANG = 3


def gang(name: str, queue: str) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": {"sim.tephra.dev/duration": "2s"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        },
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "queue": queue,
            "minAvailable": GANG,
            "tasks": [{"name": "worker", "replicas": GANG, "template": template}],
        },
    }


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    running = await start_system(tmp_path)
    yield running
    running.stop()


class Watch:
    """`vcctl events -w ...` as a process, its lines gathered as it prints them."""

    def __init__(self, system: System, *args: str) -> None:
        self.lines: list[str] = []
        self._argv = [str(BIN / "vcctl"), "events", "-w", *args]
        self._env = {**os.environ, "VC_SERVER": system.url, **system.bus.admin_env()}
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Watch:
        self._proc = await asyncio.create_subprocess_exec(
            *self._argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self._env
        )
        return self

    async def gather(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        async for line in self._proc.stdout:
            self.lines.append(line.decode().rstrip("\n"))

    async def __aexit__(self, *exc: object) -> None:
        assert self._proc is not None
        if self._proc.returncode is None:
            self._proc.terminate()
        await self._proc.wait()


async def test_a_watch_prints_a_gangs_events_as_they_happen(system: System, tmp_path: Path) -> None:
    assert system.vcctl("queue", "create", "-n", "research", "-w", "1").returncode == 0
    async with Watch(system, "-n", "default", "--queue", "research", "-o", "json") as watch:
        async with asyncio.TaskGroup() as tg:
            reading = tg.create_task(watch.gather(), name="watch-lines")
            await eventually(lambda: system.vcctl("events", "-n", "default").returncode == 0, what="vcctl events")
            await system.apply(gang("gang", "research"))
            await system.apply(gang("elsewhere", "default"))  # another queue: not this watch's

            def seen(kind: str, reason: str, phase: str | None = None) -> list[dict[str, Any]]:
                found = [json.loads(line) for line in watch.lines]
                return [
                    e for e in found if e["kind"] == kind and e["reason"] == reason and e.get("phase", phase) == phase
                ]

            await eventually(lambda: len(seen("Pod", "PodStarted", "Running")) == GANG, timeout=60, what="gang running")
            await eventually(lambda: bool(seen("Job", "PhaseChanged", "Completed")), timeout=60, what="gang done")
            reading.cancel()
    printed = [json.loads(line) for line in watch.lines]
    assert {e["job"] for e in printed} == {"gang"}
    assert [int(e["cursor"].split(".")[0]) for e in printed] == sorted(int(e["cursor"].split(".")[0]) for e in printed)
    phases = [e["phase"] for e in printed if e["kind"] == "Job" and e["reason"] == "PhaseChanged"]
    assert phases[0] == "Pending" and "Running" in phases and phases[-1] == "Completed"
    assert {e["name"] for e in printed if e["reason"] == "PodBound"} == {f"gang-worker-{i}" for i in range(GANG)}

    # The same history after the fact: a table, CloudEvents, and what follows a cursor.
    table = system.vcctl("events", "-n", "default", "--job", "gang", "--kind", "Job")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["CURSOR", "TIME", "OBJECT", "REASON", "MESSAGE"]
    assert all("Job/gang" in line for line in table.stdout.splitlines()[1:])
    cloud = system.vcctl("events", "-n", "default", "--job", "gang", "-o", "cloudevents")
    events = [json.loads(line) for line in cloud.stdout.splitlines()]
    assert {e["specversion"] for e in events} == {"1.0"}
    assert [e["id"] for e in events[: len(printed)]] == [e["id"] for e in printed]  # and what came since
    done = next(e for e in events if e["data"].get("phase") == "Completed" and e["data"]["kind"] == "Job")
    assert (done["type"], done["subject"]) == ("dev.tephra.job.PhaseChanged", "default/Job/gang")
    assert done["source"].startswith("tephra/job-controller") and done["time"] == done["data"]["occurredAt"]
    later = system.vcctl(
        "events", "-n", "default", "--queue", "research", "--since", printed[-2]["cursor"], "-o", "json"
    )
    assert [json.loads(line)["id"] for line in later.stdout.splitlines()][:1] == [printed[-1]["id"]]

    # The example consumer: the gang's wait in its queue and its run time, as the history says.
    out = await asyncio.to_thread(
        subprocess.run,
        [str(BIN / "python"), str(EXAMPLE), "--out", str(tmp_path / "stats"), "-n", "default", "--server", system.url],
        capture_output=True,
        text=True,
        env={**os.environ, **system.bus.admin_env()},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    jobs = {row["job"]: row for row in csv.DictReader((tmp_path / "stats" / "jobs.csv").open())}
    at = {e["phase"]: parse_rfc3339(e["occurredAt"]) for e in printed if e["kind"] == "Job" and "phase" in e}
    row = jobs["gang"]
    assert (row["queue"], row["phase"]) == ("research", "Completed")
    assert float(row["wait_s"]) == (at["Running"] - at["Pending"]).total_seconds()
    assert float(row["run_s"]) == (at["Completed"] - at["Running"]).total_seconds() >= 2
    queues = {row["queue"]: row for row in csv.DictReader((tmp_path / "stats" / "queues.csv").open())}
    assert queues["research"]["jobs"] == "1" and queues["research"]["mean_run_s"] == row["run_s"]
    assert queues["default"]["jobs"] == "1"  # `elsewhere`, in its own queue's row

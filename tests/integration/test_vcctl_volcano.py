"""Volcano's vcctl examples as Volcano documents them, and the kubectl habits (-l, --no-headers, -o name,
-o jsonpath, -w, describe), against a real nats-server and admission."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.test_vcctl import VCCTL, vcctl
from tests.support.services import ServiceProcess, eventually
from vc_bus.server import NatsServer
from vc_cli.up import ensure_default_queues

pytestmark = [pytest.mark.nats, pytest.mark.integration]

JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  labels: {{app: {app}}}
spec:
  minAvailable: 1
  queue: {queue}
  tasks:
  - name: worker
    replicas: 2
    template:
      spec:
        containers: [{{name: c, image: busybox}}]
"""


@pytest.fixture
async def admission(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    await ensure_default_queues(nats_server.url)
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    await service.wait_ready()
    yield service
    service.stop_quietly()


def ok(server: str, *args: str) -> str:
    result = vcctl(server, *args)
    assert result.returncode == 0, f"vcctl {' '.join(args)}: {result.stderr}"
    return result.stdout


@pytest.fixture
async def queue_controller(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    service = ServiceProcess("vc-queue-controller", nats_server.url, [], tmp_path / "queue-controller.log").start()
    await service.wait_ready()
    yield service
    service.stop_quietly()


async def test_volcanos_queue_examples_work_as_written(
    nats_server: NatsServer, admission: ServiceProcess, queue_controller: ServiceProcess
) -> None:
    url = nats_server.url
    ok(url, "queue", "create", "-n", "q1", "-w", "2")  # Volcano: -n/--name, -w/--weight
    ok(url, "queue", "create", "--name", "q2", "--weight", "3", "--state", "Closed")
    q1 = json.loads(ok(url, "queue", "get", "-n", "q1", "-o", "json"))
    assert q1["spec"]["weight"] == 2

    async def closed() -> bool:  # the queue-controller carries out the close `--state Closed` asked for
        q2 = json.loads(ok(url, "queue", "get", "--name", "q2", "-o", "json"))
        return q2["spec"]["weight"] == 3 and (q2.get("status") or {}).get("state") == "Closed"

    await eventually(closed, timeout=30)
    ok(url, "queue", "operate", "-n", "q1", "-a", "update", "-w", "5")
    assert json.loads(ok(url, "queue", "get", "-n", "q1", "-o", "json"))["spec"]["weight"] == 5
    names = ok(url, "queue", "list", "-o", "name").split()
    assert {"queue.scheduling.volcano.sh/q1", "queue.scheduling.volcano.sh/q2"} <= set(names)
    rows = ok(url, "queue", "list", "--no-headers").splitlines()
    assert rows and not any(r.split()[0] == "Name" for r in rows) and any(r.split()[0] == "q1" for r in rows)
    described = ok(url, "describe", "queue", "q1")
    assert "q1" in described and "Weight" in described
    ok(url, "queue", "operate", "--name", "q1", "--action", "close")

    async def q1_closed() -> bool:
        q1 = json.loads(ok(url, "queue", "get", "-n", "q1", "-o", "json"))
        return (q1.get("status") or {}).get("state") == "Closed"

    await eventually(q1_closed, timeout=30)
    ok(url, "queue", "delete", "-n", "q2")
    assert vcctl(url, "queue", "get", "-n", "q2").returncode != 0


async def test_volcanos_job_examples_work_as_written(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    url = nats_server.url
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(name="job-1", app="demo", queue="default"))
    ok(url, "job", "run", "--filename", str(path))
    ok(url, "job", "run", "--name", "job-2", "--image", "busybox", "--replicas", "2", "--min", "1")
    listed = ok(url, "job", "list", "--namespace", "default")
    assert "job-1" in listed and "job-2" in listed
    assert "job-2" in ok(url, "job", "view", "--name", "job-2")
    ok(url, "job", "suspend", "--name", "job-1")  # a Command for the job controller, as in Volcano
    ok(url, "job", "resume", "-N", "job-1")
    ok(url, "job", "delete", "--name", "job-2")
    assert "job-2" not in ok(url, "job", "list")


async def test_jobs_by_selector_name_jsonpath_and_describe(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    url = nats_server.url
    for name, app in (("web-1", "web"), ("batch-1", "batch")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(JOB.format(name=name, app=app, queue="default"))
        ok(url, "job", "run", "-f", str(path))
    assert ok(url, "job", "list", "-l", "app=web", "-o", "name").split() == ["job.batch.volcano.sh/web-1"]
    assert ok(url, "job", "list", "-l", "app in (web, batch)", "-o", "name").split() == [
        "job.batch.volcano.sh/batch-1",
        "job.batch.volcano.sh/web-1",
    ]
    assert ok(url, "job", "list", "-l", "app!=web", "--no-headers").split()[0] == "batch-1"
    jsonpath = ok(url, "job", "list", "-o", "jsonpath={.items[*].metadata.name}")
    assert jsonpath.split() == ["batch-1", "web-1"]
    described = ok(url, "describe", "job", "web-1")
    assert "web-1" in described and "worker" in described
    assert ok(url, "job", "view", "-N", "web-1")
    bad = vcctl(url, "job", "list", "-l", "app in (web")
    assert bad.returncode == 2 and "missing ')'" in bad.stderr
    ok(url, "job", "delete", "-N", "batch-1")
    assert ok(url, "job", "list", "-o", "name").split() == ["job.batch.volcano.sh/web-1"]


async def test_watch_prints_the_list_then_each_change(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    url = nats_server.url
    watcher = await asyncio.create_subprocess_exec(
        VCCTL, "-s", url, "queue", "list", "-w", "-o", "name", stdout=asyncio.subprocess.PIPE
    )
    assert watcher.stdout is not None
    try:
        async with asyncio.timeout(30):
            first = (await watcher.stdout.readline()).decode().strip()  # the list it starts from
            assert first.startswith("queue.scheduling.volcano.sh/")
            ok(url, "queue", "create", "-n", "watched")
            while True:
                line = (await watcher.stdout.readline()).decode()
                assert line, "the watch ended before printing the new queue"
                if line.strip() == "queue.scheduling.volcano.sh/watched":
                    break
    finally:
        watcher.terminate()
        await watcher.wait()


def test_local_tools_need_no_server(tmp_path: Path) -> None:
    unreachable = "nats://127.0.0.1:1"
    version = vcctl(unreachable, "version", "--client", "-o", "json")
    assert version.returncode == 0 and json.loads(version.stdout)["clientVersion"]
    script = tmp_path / "vcctl.bash"
    completion = vcctl(unreachable, "completion", "bash")
    assert completion.returncode == 0
    script.write_text(completion.stdout)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    missing = vcctl(unreachable, "job", "run", "-f", str(tmp_path / "nonexistent.yaml"))
    assert missing.returncode == 2 and "nonexistent.yaml" in missing.stderr and "reach" not in missing.stderr

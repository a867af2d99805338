"""`vcctl up` (what `make run` runs) starts vc-dashboard and prints `dashboard: http://HOST:PORT/` before
`ready`; the URL serves the overview of that very system."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.services import ServiceProcess
from vc_bus.server import NatsServer, free_port
from vc_cli.up import ensure_default_queues

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]
BIN = Path(sys.executable).parent
DASHBOARD_LINE = re.compile(r"^dashboard: (http://127\.0\.0\.1:(\d+)/)$")


def lines_until_ready(proc: subprocess.Popen[str], log: Path, timeout: float = 90) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"vcctl up exited ({proc.wait()}) before ready: {lines}\n{log.read_text()[-3000:]}")
        lines.append(line.rstrip("\n"))
        if lines[-1] == "ready":
            return lines
    raise AssertionError(f"not ready in {timeout}s: {lines}")


def test_up_prints_the_dashboard_url_before_ready_and_serves_it(tmp_path: Path) -> None:
    wanted = free_port()  # the given port is used even when the default would be free
    log = tmp_path / "up.log"
    argv = [
        str(BIN / "vcctl"),
        "up",
        "--data",
        str(tmp_path / "data"),
        "--nats-port",
        str(free_port()),
        "--nodes",
        "1",
        "--dashboard-port",
        str(wanted),
    ]
    with log.open("w") as stderr:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        lines = lines_until_ready(proc, log)
        matches = [m for line in lines if (m := DASHBOARD_LINE.match(line))]
        assert len(matches) == 1, lines
        assert lines.index(matches[0].string) == len(lines) - 2  # the line right before `ready`
        url, port = matches[0].group(1), int(matches[0].group(2))
        assert port == wanted
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
        assert response.status == 200 and "<h1>Overview</h1>" in page and 'data-queue="default"' in page
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_sigterm_ends_open_live_streams_and_exits_zero(nats_server: NatsServer, tmp_path: Path) -> None:
    await ensure_default_queues(nats_server.url)
    port = free_port()
    dashboard = ServiceProcess("vc-dashboard", nats_server.url, ["--http-port", str(port)], tmp_path / "dashboard.log")
    dashboard.start()
    try:
        await dashboard.wait_ready(timeout=60)
        stream = await asyncio.to_thread(urllib.request.urlopen, f"http://127.0.0.1:{port}/stream/queues", timeout=30)
        first = await asyncio.to_thread(stream.readline)
        assert first == b"event: update\n"
        assert await asyncio.to_thread(dashboard.terminate, 30) == 0  # the open stream does not hold it up
        rest = await asyncio.to_thread(stream.read)  # the server ended the stream (no hang, no reset)
        assert b'data-queue="default"' in rest
        assert '"event":"shutdown.done"' in dashboard.log_text()
    finally:
        dashboard.stop_quietly()

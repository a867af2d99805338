"""`vcctl up` (what `make run` runs) starts vc-dashboard and prints `dashboard: http://HOST:PORT/` before
`ready`; the URL serves the overview of that very system."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.support.secure import session_bus
from tests.support.services import ServiceProcess
from tests.support.system import SEEDS
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


def vcctl(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("VC_")}
    return subprocess.run(
        [str(BIN / "vcctl"), *args], capture_output=True, text=True, input=stdin, env={**clean, **env}, timeout=60
    )


def fetch(url: str, *, token: str | None = None, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    if host is not None:
        request.add_header("Host", host)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def check_logins(url: str, server: str, data: Path, tmp_path: Path) -> None:
    """401 without a login; a tenant sees its namespace's job, not another's (403); a foreign Host gets
    421 whoever asks. The people are vcctl's: `vcctl user create`, tokens from `vcctl user token`."""
    admin = {"VC_DATA": str(data), "VC_SERVER": server}
    for namespace in ("team-a", "team-b"):
        job = yaml.safe_load((SEEDS / "tensorflow-benchmark.yaml").read_text())
        job["metadata"].update(name=f"{namespace}-job", namespace=namespace)
        applied = vcctl("apply", "-f", "-", stdin=yaml.safe_dump(job), **admin)
        assert applied.returncode == 0, applied.stderr
    creds = tmp_path / "alice.creds"
    created = vcctl("user", "create", "alice", "--namespaces", "team-a", "--data", str(data), "-o", str(creds))
    assert created.returncode == 0, created.stderr
    made = vcctl("--creds", str(creds), "user", "token")
    assert made.returncode == 0, made.stderr
    alice = made.stdout.strip()

    assert fetch(url)[0] == 401
    assert fetch(f"{url}jobs/team-b/team-b-job")[0] == 401
    status, jobs = fetch(f"{url}jobs", token=alice)
    assert status == 200 and 'data-job="team-a/team-a-job"' in jobs and "team-b-job" not in jobs
    assert fetch(f"{url}jobs/team-a/team-a-job", token=alice)[0] == 200
    assert fetch(f"{url}jobs/team-b/team-b-job", token=alice)[0] == 403
    assert fetch(f"{url}jobs/team-b/team-b-job", token=alice, host="evil.example.com")[0] == 421
    assert fetch(url, host="evil.example.com")[0] == 421


def test_up_prints_the_dashboard_url_before_ready_and_serves_it(tmp_path: Path) -> None:
    wanted = free_port()  # the given port is used even when the default would be free
    log = tmp_path / "up.log"
    nats_port = free_port()
    argv = [
        str(BIN / "vcctl"),
        "up",
        "--data",
        str(tmp_path / "data"),
        "--nats-port",
        str(nats_port),
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
        assert any(line.startswith("dashboard login: ") and "vcctl user token" in line for line in lines)
        data = tmp_path / "data"
        admin = vcctl("user", "token", VC_DATA=str(data))
        assert admin.returncode == 0, admin.stderr
        status, page = fetch(url, token=admin.stdout.strip())
        assert status == 200 and "<h1>Overview</h1>" in page and 'data-queue="default"' in page
        check_logins(url, f"nats://127.0.0.1:{nats_port}", data, tmp_path)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_sigterm_ends_open_live_streams_and_exits_zero(nats_server: NatsServer, tmp_path: Path) -> None:
    await ensure_default_queues(nats_server.url)
    port = free_port()
    bus = session_bus()
    argv = ["--http-port", str(port), *bus.dashboard_logins()]
    dashboard = ServiceProcess("vc-dashboard", nats_server.url, argv, tmp_path / "dashboard.log")
    dashboard.start()
    try:
        await dashboard.wait_ready(timeout=60)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/stream/queues")
        request.add_header("Authorization", f"Bearer {bus.login_token()}")
        stream = await asyncio.to_thread(urllib.request.urlopen, request, timeout=30)
        first = await asyncio.to_thread(stream.readline)
        assert first == b"event: update\n"
        assert await asyncio.to_thread(dashboard.terminate, 30) == 0  # the open stream does not hold it up
        rest = await asyncio.to_thread(stream.read)  # the server ended the stream (no hang, no reset)
        assert b'data-queue="default"' in rest
        assert '"event":"shutdown.done"' in dashboard.log_text()
    finally:
        dashboard.stop_quietly()

"""`vcctl up` (what `make run` runs): every service ready, `ready` printed, Ctrl-C stops cleanly, state persists."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vc_bus.server import free_port

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow]
BIN = Path(sys.executable).parent
SERVICES = ("admission", "queue-controller", "podgroup-controller", "job-controller", "gc", "scheduler-0", "node-sim")


def start_up(data: Path, port: int) -> subprocess.Popen[str]:
    data.mkdir(parents=True, exist_ok=True)
    log = (data / "up.log").open("a")
    return subprocess.Popen([str(BIN / "vcctl"), "up", "--data", str(data), "--nats-port", str(port), "--nodes", "2"],
                            stdout=subprocess.PIPE, stderr=log, text=True)


def wait_ready(proc: subprocess.Popen[str], timeout: float = 90) -> list[str]:
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            log = Path(proc.args[3]) / "up.log"  # type: ignore[index]
            tail = [x for x in log.read_text().splitlines() if not x.startswith("{")][-10:] if log.exists() else []
            raise AssertionError(f"vcctl up exited ({proc.wait()}) before ready: {lines} {tail}")
        lines.append(line.strip())
        if line.strip() == "ready":
            return lines
    raise AssertionError(f"not ready in {timeout}s: {lines}")


def vcctl(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VC_SERVER": f"nats://127.0.0.1:{port}"}
    return subprocess.run([str(BIN / "vcctl"), *args], capture_output=True, text=True, env=env, timeout=60)


def test_up_serves_stops_cleanly_and_keeps_state(tmp_path: Path) -> None:
    port = free_port()
    proc = start_up(tmp_path / "data", port)
    try:
        lines = wait_ready(proc)
        assert lines[-1] == "ready" and any(f"nats://127.0.0.1:{port}" in line for line in lines)
        assert all(any(line.startswith(f"{name}:") for line in lines) for name in SERVICES)
        assert vcctl(port, "queue", "create", "-N", "kept", "--weight", "2").returncode == 0
        nodes = vcctl(port, "node", "list").stdout
        assert "node-0" in nodes and "node-1" in nodes
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    again = start_up(tmp_path / "data", port)
    try:
        wait_ready(again)
        listed = vcctl(port, "queue", "list").stdout
        assert "kept" in listed and "default" in listed
        again.send_signal(signal.SIGTERM)
        assert again.wait(60) == 0
    finally:
        if again.poll() is None:
            again.kill()


def test_up_refuses_a_taken_port(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = subprocess.run([str(BIN / "vcctl"), "up", "--data", str(tmp_path), "--nats-port", str(port)],
                                capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "already in use" in result.stderr

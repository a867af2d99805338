"""`make run` (`vcctl up`) keeps the terminal for people: progress, addresses and `ready`; the services'
logs go to one file each under DATA/logs, unless `--log-to-terminal` asks for them on stderr."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vc_bus.server import free_port

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow]
BIN = Path(sys.executable).parent
MAX_LINES_UP_TO_READY = 15


def _terminal_until_ready(data: Path, *extra: str) -> list[str]:
    """Everything `vcctl up` prints on stdout and stderr together up to `ready`; then it is stopped."""
    argv = [str(BIN / "vcctl"), "up", "--data", str(data), "--nats-port", str(free_port()), "--nodes", "2", *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"vcctl up exited ({proc.wait()}) before ready: {lines[-20:]}")
            lines.append(line.rstrip("\n"))
            if line.strip() == "ready":
                break
        else:
            raise AssertionError(f"not ready in time: {lines[-20:]}")
        proc.send_signal(signal.SIGINT)
        proc.stdout.read()  # what it says while stopping is not counted, but must not block its exit
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return lines


@pytest.mark.timeout(300)
def test_up_prints_at_most_fifteen_lines_up_to_ready_and_logs_each_service_to_its_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    lines = _terminal_until_ready(data)
    assert len(lines) <= MAX_LINES_UP_TO_READY, "\n".join(lines)
    assert not any(line.startswith("{") for line in lines), "\n".join(lines)
    assert any(line.startswith("logs:") and str(data / "logs") in line for line in lines)
    for service in ("admission", "scheduler-0", "node-sim", "vc-dashboard"):
        log = data / "logs" / f"{service}.log"
        first = log.read_text().splitlines()[0]
        assert json.loads(first)["event"], first  # the service's own JSON lines, as they were on stderr


@pytest.mark.timeout(300)
def test_log_to_terminal_brings_the_services_logs_back(tmp_path: Path) -> None:
    lines = _terminal_until_ready(tmp_path / "data", "--log-to-terminal")
    assert sum(1 for line in lines if line.startswith("{")) > MAX_LINES_UP_TO_READY
    assert not (tmp_path / "data" / "logs").exists()


def test_up_help_says_where_the_logs_are() -> None:
    result = subprocess.run([str(BIN / "vcctl"), "up", "--help"], capture_output=True, text=True, timeout=30)
    assert "DATA/logs/<service>.log" in " ".join(result.stdout.split()) and "--log-to-terminal" in result.stdout

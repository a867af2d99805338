"""The service runtime, through a real service process: probes, metrics, readiness on NATS loss, SIGTERM."""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.services import ServiceProcess, eventually
from vc_bus.server import NatsServer

pytestmark = [pytest.mark.nats, pytest.mark.integration]


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


async def test_probes_metrics_and_graceful_sigterm(nats_server: NatsServer, tmp_path: Path) -> None:
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    try:
        await service.wait_ready()
        assert get(service.health_port, "/livez") == (200, "ok")
        assert get(service.health_port, "/readyz") == (200, "ok")
        status, metrics = get(service.health_port, "/metrics")
        assert status == 200 and "tephra_admission_requests_total" in metrics and "process_cpu_seconds_total" in metrics
        assert service.proc is not None
        service.proc.send_signal(signal.SIGTERM)
        assert service.proc.wait(30) == 0
        logs = [json.loads(line) for line in service.log_text().splitlines() if line.startswith("{")]
        events = [entry["event"] for entry in logs]
        assert events.index("shutdown.begin") < events.index("shutdown.done")
        assert all(entry["service"] == "admission" for entry in logs if "service" in entry)
    finally:
        service.stop_quietly()


async def test_readiness_follows_the_nats_connection(nats_server: NatsServer, tmp_path: Path) -> None:
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    try:
        await service.wait_ready()
        nats_server.stop()

        async def unready() -> bool:
            status, body = get(service.health_port, "/readyz")
            return status == 503 and "nats" in json.loads(body)["unmet"]

        await eventually(unready, timeout=15)
        assert get(service.health_port, "/livez")[0] == 200  # alive: it reconnects by itself
        nats_server.start()
        await service.wait_ready(timeout=30)
    finally:
        service.stop_quietly()


def test_bad_configuration_exits_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    binary = Path(sys.executable).parent / "vc-scheduler"
    result = subprocess.run([str(binary), "--nats", "http://wrong"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and "--nats" in result.stderr

"""Every service exits within the grace period of SIGTERM, also while its NATS server is gone.

Kubernetes kills a pod 30 s after SIGTERM by default; a service stuck in nats-py's reconnect loop, or
in a drain or a flush that waits for a server that is not there, would be killed mid-write instead of
leaving cleanly. The services run side by side (one server, one test) to keep the test short. And a
computation left running in a worker thread (a scheduling cycle) does not hold the exit either.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
import urllib.error
import urllib.request
from functools import partial
from pathlib import Path

import pytest

from tests.support import secure
from tests.support.services import ServiceProcess, eventually
from vc_bus.server import NatsServer

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.timeout(300)]

GRACE_S = 20.0  # what every service must keep to (below Kubernetes' default of 30 s)


def services(url: str, logs: Path) -> dict[str, ServiceProcess]:
    bus = secure.current()
    assert bus is not None
    plan = {
        "vc-admission": ["--identities", str(bus.auth.registry_path)],
        "vc-job-controller": [],
        "vc-queue-controller": [],
        "vc-podgroup-controller": [],
        "vc-gc": [],
        "vc-flow-controller": [],
        "vc-scheduler": [],
        "vc-node-sim": ["--nodes", "20"],
        "vc-dashboard": ["--http-port", "0"],
    }
    return {binary: ServiceProcess(binary, url, args, logs / f"{binary}.log") for binary, args in plan.items()}


def nats_unmet(service: ServiceProcess) -> bool:
    """The service's /readyz says its NATS connection is down (it is in its reconnect loop)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{service.health_port}/readyz", timeout=2):
            return False
    except urllib.error.HTTPError as err:
        return err.code == 503 and "nats" in json.loads(err.read())["unmet"]
    except OSError:
        return False


async def exits_within(service: ServiceProcess, seconds: float) -> tuple[float, int | None]:
    """Seconds from now until the process exited (or `seconds` if it did not), and its exit code."""
    assert service.proc is not None
    started = time.monotonic()
    while service.proc.poll() is None and time.monotonic() - started < seconds:  # noqa: ASYNC110 - a process
        await asyncio.sleep(0.1)
    return time.monotonic() - started, service.proc.poll()


async def test_every_service_exits_within_the_grace_period_with_nats_gone(
    nats_server: NatsServer, tmp_path: Path
) -> None:
    running = services(nats_server.url, tmp_path)
    try:
        for service in running.values():
            service.start()
        await asyncio.gather(*(service.wait_ready(timeout=150) for service in running.values()))
        nats_server.stop()
        for name, service in running.items():
            await eventually(partial(asyncio.to_thread, nats_unmet, service), what=f"{name} sees NATS gone")
        for service in running.values():
            assert service.proc is not None
            service.proc.send_signal(signal.SIGTERM)
        outcomes = await asyncio.gather(*(exits_within(s, GRACE_S + 10) for s in running.values()))
        late = {
            name: (round(took, 1), code, service.log_text()[-1500:])
            for (name, service), (took, code) in zip(running.items(), outcomes, strict=True)
            if code != 0 or took > GRACE_S
        }
        assert not late, f"services that did not exit cleanly within {GRACE_S} s of SIGTERM: {late}"
    finally:
        for service in running.values():
            service.stop_quietly()


async def test_a_computation_in_a_worker_thread_does_not_hold_the_exit(nats_server: NatsServer, tmp_path: Path) -> None:
    """The event loop's close joins the default executor's threads: a planning cycle computing in
    `asyncio.to_thread` kept the process alive until it finished. It is abandoned at the grace period."""
    grace_s = 6.0
    service = ServiceProcess(
        "vc-gc",  # its identity
        nats_server.url,
        ["--grace", str(grace_s)],
        tmp_path / "service.log",
        module="tests.support.computing_service",
    ).start()
    assert service.proc is not None
    try:
        await service.wait_ready(timeout=60)
        service.proc.send_signal(signal.SIGTERM)
        took, code = await exits_within(service, grace_s + 10)
        assert code == 0 and took <= grace_s, (took, code, service.log_text()[-1500:])
        assert "shutdown.threads_abandoned" in service.log_text()
    finally:
        service.stop_quietly()

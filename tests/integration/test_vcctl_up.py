"""`vcctl up` (what `make run` runs): every service ready, `ready` printed, Ctrl-C stops cleanly, state persists."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.services import eventually
from vc_bus.server import free_port
from vc_cli.up import metrics_port, metrics_port_span

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow]
BIN = Path(sys.executable).parent
SERVICES = ("admission", "queue-controller", "podgroup-controller", "job-controller", "gc", "scheduler-0", "node-sim")


def start_up(data: Path, port: int, *extra: str) -> subprocess.Popen[str]:
    data.mkdir(parents=True, exist_ok=True)
    log = (data / "up.log").open("a")
    argv = [str(BIN / "vcctl"), "up", "--data", str(data), "--nats-port", str(port), "--nodes", "2", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)


def free_ports(count: int) -> int:
    """The first of `count` consecutive ports that are free now (for --metrics-port-base)."""
    import socket

    # Above the kernel's ephemeral range (32768-60999 on Linux), where no outgoing connection takes a
    # port, and apart from free_port()'s 20000-32767, where this test's other servers get theirs.
    first = random.randrange(61000, 65536 - 100 * count)  # every base tried below stays under 65536
    for base in range(first, first + 100 * count, count):
        try:
            with contextlib.ExitStack() as held:
                for port in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise AssertionError(f"no {count} consecutive free ports")


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
    base = free_ports(metrics_port_span(1))
    again = start_up(tmp_path / "data", port, "--metrics-port-base", str(base))
    try:
        lines = wait_ready(again)
        listed = vcctl(port, "queue", "list").stdout
        assert "kept" in listed and "default" in listed
        # Fixed, printed metrics ports: admission is N+0, the schedulers last (`vcctl up --help` has the order).
        scheduler = metrics_port(base, "scheduler-0")
        assert f"admission:           http://127.0.0.1:{base}/metrics" in lines
        assert f"scheduler-0:         http://127.0.0.1:{scheduler}/metrics" in lines
        with urllib.request.urlopen(f"http://127.0.0.1:{scheduler}/metrics", timeout=10) as response:
            assert "volcano_e2e_scheduling_latency_milliseconds" in response.read().decode()
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
        result = subprocess.run(
            [str(BIN / "vcctl"), "up", "--data", str(tmp_path), "--nats-port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 1 and "already in use" in result.stderr


# -- `vcctl up` supervises nats-server, locks its data, and takes its children along ----


def holders(data: Path) -> dict[str, int]:
    """What the data directory's lock file says: {"vcctl-up": pid, "nats-server": pid}."""
    text = (data / "lock").read_text()
    return {name: int(pid) for name, _, pid in (item.partition("=") for item in text.split())}


def state_of(pid: int) -> str | None:
    """The process's state letter (Z: a zombie nobody reaped), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def job_file(path: Path, name: str) -> Path:
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: " + name + "}\n"
        "spec:\n  tasks:\n  - name: work\n    replicas: 1\n    template:\n"
        "      metadata: {annotations: {sim.tephra.dev/duration: 1s}}\n"
        "      spec: {containers: [{name: main, image: busybox, resources: {requests: {cpu: '1'}}}]}\n"
    )
    return path


def phase_of(port: int, name: str) -> str | None:
    view = vcctl(port, "job", "view", "-N", name, "-o", "json")
    return json.loads(view.stdout).get("status", {}).get("state", {}).get("phase") if view.returncode == 0 else None


async def job_completes(port: int, path: Path, name: str) -> None:
    async def submitted() -> bool:
        run = await asyncio.to_thread(vcctl, port, "job", "run", "-f", str(job_file(path, name)))
        return run.returncode == 0 or "AlreadyExists" in run.stderr  # an earlier try may have landed

    async def completed() -> bool:
        return await asyncio.to_thread(phase_of, port, name) == "Completed"

    await eventually(submitted, timeout=60, interval=0.5)  # services reconnect to a restarted server on their own
    await eventually(completed, timeout=90, interval=0.5)


@pytest.mark.timeout(300)
async def test_up_restarts_a_killed_nats_server_on_its_store_and_keeps_serving(tmp_path: Path) -> None:
    port, data = free_port(), tmp_path / "data"
    proc = start_up(data, port)
    try:
        await asyncio.to_thread(wait_ready, proc)
        await job_completes(port, tmp_path / "before.yaml", "before")
        first = holders(data)["nats-server"]
        os.kill(first, signal.SIGKILL)

        async def restarted() -> bool:
            return holders(data).get("nats-server") not in (None, first)

        await eventually(restarted, timeout=60)
        assert state_of(first) is None  # reaped, not left a zombie
        await job_completes(port, tmp_path / "after.yaml", "after")
        listed = await asyncio.to_thread(vcctl, port, "job", "list")
        assert "before" in listed.stdout and "after" in listed.stdout  # the store came back with it
        assert proc.poll() is None
        log = (data / "up.log").read_text()
        assert '"child": "nats-server"' in log and "child.restarting" in log
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.timeout(300)
async def test_one_up_per_data_dir_and_every_child_dies_with_up(tmp_path: Path) -> None:
    port, data = free_port(), tmp_path / "data"
    proc = start_up(data, port)
    try:
        await asyncio.to_thread(wait_ready, proc)
        second = await asyncio.to_thread(
            subprocess.run,
            [str(BIN / "vcctl"), "up", "--data", str(data), "--nats-port", str(free_port())],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 1, second.stderr
        assert second.stderr.strip().count("\n") == 0 and "Traceback" not in second.stderr
        assert f"in use by another `vcctl up` (vcctl-up pid {proc.pid}" in second.stderr
        children = children_of(proc.pid)
        assert len(children) == 10  # nats-server, 7 services, node-sim and vc-dashboard
        proc.kill()
        proc.wait()

        async def all_gone() -> bool:
            return all(state_of(pid) in (None, "Z") for pid in children)

        await eventually(all_gone, timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    again = start_up(data, port)  # the lock went with them
    try:
        await asyncio.to_thread(wait_ready, again)
        again.send_signal(signal.SIGINT)
        assert again.wait(60) == 0
    finally:
        if again.poll() is None:
            again.kill()

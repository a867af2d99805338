"""Every Tephra service of a chaos run as its own OS process, supervised as Kubernetes (or `vcctl up`)
would: an instance the harness kills is restarted after a moment; one that exits by itself is
restarted too, and counted (a crash is reported with the run, not hidden).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vc_bus.server import free_port

BIN = Path(sys.executable).parent
BREAKS = Path(__file__).resolve().parent / "breaks"
RESTART_AFTER_S = 1.0
LEASE_TTL_S = "3"

# Per kind: the extra flags of a chaos run (short leases and periods so ownership moves within a run).
SERVICE_ARGS: dict[str, list[str]] = {
    "admission": [],
    "job-controller": ["--lease-ttl", LEASE_TTL_S],
    "queue-controller": ["--lease-ttl", LEASE_TTL_S],
    "podgroup-controller": ["--lease-ttl", LEASE_TTL_S],
    "gc": ["--lease-ttl", LEASE_TTL_S],
    "scheduler": ["--lease-ttl", LEASE_TTL_S, "--schedule-period", "0.5"],
    "kube-relay": [],  # kube mode only
}


@dataclass
class Instance:
    name: str  # "<kind>-<i>"
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    health_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    down_since: float | None = None  # killed by the harness, restart due
    paused: bool = False

    @property
    def kind(self) -> str:
        return self.name.rsplit("-", 1)[0]

    def start(self) -> None:
        argv = [*self.argv, "--health-port", str(self.health_port)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                argv,
                stdout=subprocess.DEVNULL,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
        self.down_since, self.paused = None, False

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def kill(self) -> None:
        if self.running():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()
        self.down_since, self.paused = time.monotonic(), False

    def pause(self) -> bool:
        if not self.running() or self.paused:
            return False
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.paused = True
        return True

    def resume(self) -> None:
        if self.paused and self.running():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused = False

    def terminate(self, timeout: float = 20.0) -> None:
        if not self.running():
            return
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Fleet:
    def __init__(
        self,
        root: Path,
        *,
        urls: dict[str, str],
        replicas: int,
        node_args: list[str],
        breaks: str = "",
        more: Mapping[str, list[str]] | None = None,
    ) -> None:
        """`urls`: per instance name, the NATS server list it connects to (a proxy link or the servers);
        `more`: per instance name, more flags (kube mode: `--backend kube --kubeconfig ...`)."""
        self.root = root
        self.instances: dict[str, Instance] = {}
        self.crashes: Counter[str] = Counter()
        self.restarts: Counter[str] = Counter()
        for name, url in urls.items():
            kind = name.rsplit("-", 1)[0]
            extra = node_args if kind == "node-sim" else SERVICE_ARGS[kind]
            argv = [
                str(BIN / f"vc-{kind}"),
                "--nats",
                url,
                "--nats-replicas",
                str(replicas),
                "--instance",
                name,
                "--grace",
                "5",
                *extra,
                *(more or {}).get(name, []),
            ]
            env = {**os.environ, "VC_LOG__LEVEL": "info"}
            if breaks and kind == "scheduler":
                # The broken build: a test-only module on the path patches the scheduler at import.
                env |= {"PYTHONPATH": str(BREAKS), "VC_CHAOS_BREAK": breaks}
            self.instances[name] = Instance(name, argv, env, root / f"{name}.log")

    def start(self, names: Iterable[str]) -> None:
        for name in names:
            self.instances[name].start()

    async def wait_ready(self, names: Iterable[str], limit_s: float = 180.0) -> None:
        """Until each is ready (the supervisor restarts one that exits meanwhile, and counts it)."""
        pending = [self.instances[n] for n in names]
        deadline = time.monotonic() + limit_s
        while pending:
            for inst in list(pending):
                if await asyncio.to_thread(inst.ready):
                    pending.remove(inst)
            if time.monotonic() > deadline:
                why = "; ".join(f"{i.name}: {' | '.join(self.crash_lines(i.name, 1))[:300]}" for i in pending)
                raise RuntimeError(f"not ready after {limit_s:.0f} s: {why}")
            await asyncio.sleep(0.2)

    def by_kind(self, kind: str) -> list[Instance]:
        return [i for i in self.instances.values() if i.kind == kind]

    async def supervise(self, stop: asyncio.Event) -> None:
        """Restart what is down: killed by the harness (after RESTART_AFTER_S) or exited by itself."""
        while not stop.is_set():
            self.restart_due(time.monotonic())
            try:
                async with asyncio.timeout(0.25):
                    await stop.wait()
            except TimeoutError:
                pass

    def restart_due(self, now: float) -> None:
        for inst in self.instances.values():
            if inst.proc is None or inst.running():
                continue
            if inst.down_since is None:  # it exited without being asked to
                self.crashes[inst.name] += 1
                inst.down_since = now
            if now - inst.down_since >= RESTART_AFTER_S:
                self.restarts[inst.name] += 1
                inst.start()

    def crash_all(self) -> None:
        """kill -9 every process at once (an OS crash); the supervisor brings them back."""
        for inst in self.instances.values():
            inst.kill()

    def hold_down(self) -> None:
        """Keep every instance down until `release()` (the supervisor skips them)."""
        for inst in self.instances.values():
            inst.down_since = float("inf")

    def release(self) -> None:
        for inst in self.instances.values():
            if not inst.running():
                inst.down_since = 0.0

    def pause_all(self) -> list[Instance]:
        """SIGSTOP every running instance not paused already; returns them (for `resume`)."""
        return [inst for inst in self.instances.values() if inst.pause()]

    def heal(self) -> None:
        for inst in self.instances.values():
            inst.resume()

    def stop_all(self) -> None:
        self.hold_down()  # what exits from now on was asked to
        for inst in self.instances.values():
            inst.resume()
        for inst in self.instances.values():
            if inst.running():
                assert inst.proc is not None
                inst.proc.terminate()
        for inst in self.instances.values():
            inst.terminate()

    def metric_totals(self, kind: str, prefix: str) -> dict[str, float]:
        """Sum over the running instances of `kind` of every /metrics sample whose name starts with
        `prefix` (labels dropped): a look at what happened inside, for the harness log."""
        totals: dict[str, float] = {}
        for inst in self.by_kind(kind):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{inst.health_port}/metrics", timeout=2) as response:
                    text = response.read().decode()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith(prefix):
                    name, _, value = line.rpartition(" ")
                    base = name.split("{", 1)[0]
                    if base.endswith("_created"):
                        continue  # the time a counter appeared, not a count
                    totals[base] = totals.get(base, 0.0) + float(value)
        return totals

    def crash_report(self) -> str:
        if not self.crashes:
            return ""
        return ", ".join(f"{name} x{count}" for name, count in sorted(self.crashes.items()))

    def crash_lines(self, name: str, lines: int = 5) -> list[str]:
        """Why an instance exited, from the last `service.crashed` lines of its log, one line each."""
        path = self.instances[name].log_path
        text = path.read_text(errors="replace") if path.exists() else ""
        return [f"{name}: {crash_summary(line)}" for line in text.splitlines() if '"service.crashed"' in line][-lines:]


def crash_summary(line: str) -> str:
    """`<time> <exception>: <message> at <file>:<line> (<function>)` from a structlog crash line: the
    exception raised (the first of its chain that is not a group) and its deepest frame in Tephra."""
    try:
        record = json.loads(line)
    except ValueError:
        return line[:200]
    chain = record.get("exception") or []
    raised = next((e for e in chain if "ExceptionGroup" not in str(e.get("exc_type"))), chain[0] if chain else {})
    ours = [f for f in raised.get("frames") or [] if "/src/vc_" in str(f.get("filename"))]
    where = ""
    if ours:
        frame = ours[-1]
        where = f" at {str(frame['filename']).split('/src/', 1)[-1]}:{frame.get('lineno')} ({frame.get('name')})"
    message = str(raised.get("exc_value"))[:160]
    return f"{str(record.get('timestamp', ''))[11:19]} {raised.get('exc_type')}: {message}{where}"

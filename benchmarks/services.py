"""Tephra services as OS processes in a benchmark: start one (its log in a folder), wait until every one
reports ready on /readyz, read its /metrics and sum a metric's samples.

Each service serves /readyz and /metrics on its --health-port; the benchmarks give each a free port.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
            return r.status == 200
    except OSError:
        return False


def scrape(port: int) -> str:
    """The service's /metrics text ("" when it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return str(r.read().decode())
    except OSError:
        return ""


def metric_sum(text: str, name: str, label: str = "") -> float:
    """Sum of a metric's samples over its labels (only those whose labels contain `label`)."""
    pattern = rf"^{re.escape(name)}(\{{[^}}]*\}})? ([0-9.e+-]+)$"
    return sum(float(m.group(2)) for m in re.finditer(pattern, text, re.M) if label in (m.group(1) or ""))


def metric_by_label(text: str, name: str, label: str) -> dict[str, float]:
    """A metric's samples summed by the value of one of its labels (e.g. a counter's by `outcome`)."""
    out: dict[str, float] = {}
    pattern = rf"^{re.escape(name)}\{{([^}}]*)\}} ([0-9.e+-]+)$"
    for m in re.finditer(pattern, text, re.M):
        value = re.search(rf'(?:^|,){re.escape(label)}="([^"]*)"', m.group(1))
        if value is not None:
            out[value.group(1)] = out.get(value.group(1), 0.0) + float(m.group(2))
    return out


def metric_declared(text: str, name: str) -> bool:
    """Whether the service exports the metric at all: a labelled counter nothing has counted yet has its
    `# TYPE` line but no sample, and reads 0; a metric the service does not have has neither."""
    family = name.removesuffix("_total")  # prometheus_client declares a counter under its name less `_total`
    return re.search(rf"^# TYPE ({re.escape(family)}|{re.escape(name)}) ", text, re.M) is not None


@dataclass
class Proc:
    name: str
    argv: list[str]
    port: int
    proc: subprocess.Popen[bytes] | None = None

    def start(self, log_dir: Path) -> None:
        log = open(log_dir / f"{self.name}.log", "ab")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def wait_ready(procs: Iterable[Proc], log_dir: Path, timeout_s: float = 300.0) -> None:
    """Until every process answers /readyz; SystemExit with the end of its log when one exits first, or
    naming the first one still not ready after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    for p in procs:
        while not await asyncio.to_thread(ready, p.port):
            if p.proc and p.proc.poll() is not None:
                raise SystemExit(f"{p.name} exited: {(log_dir / f'{p.name}.log').read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{p.name} not ready")
            await asyncio.sleep(0.2)

"""What the benchmarks measure about processes: CPU seconds and memory from /proc, and py-spy samples.

CPU is read before and after the measured phase, so start-up (imports, cache sync, node
registration) is not charged to the pods; a figure per pod divides the load phase's CPU by the pods.
Memory likewise: a process's bytes per pod are its peak resident size less its resident size when the
load began, over the pods.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_seconds(pid: int | None) -> float:
    """User plus system CPU time a process has used so far (Linux /proc), 0 when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int | None, field_name: str) -> int:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except (OSError, TypeError):
        return 0
    for line in lines:
        name, _, value = line.partition(":")
        if name == field_name:
            return int(value.split()[0])
    return 0


def rss_bytes(pid: int | None) -> int:
    """The memory a process holds resident now (Linux VmRSS), 0 when unknown."""
    return 1024 * _status_kib(pid, "VmRSS")


def peak_rss_bytes(pid: int | None) -> int:
    """The most memory a process has held resident so far (Linux VmHWM), 0 when unknown."""
    return 1024 * _status_kib(pid, "VmHWM")


@dataclass
class MemoryMeter:
    """Peak resident memory of named processes, and what the load added per pod: `start()`, the work,
    `stop()` (while the processes still run)."""

    pids: Mapping[str, int | None]
    before: dict[str, int] = field(default_factory=dict)
    peak: dict[str, int] = field(default_factory=dict)

    def start(self) -> None:
        self.before = {name: rss_bytes(pid) for name, pid in self.pids.items()}

    def stop(self) -> dict[str, int]:
        self.peak = {name: peak_rss_bytes(pid) for name, pid in self.pids.items()}
        return self.peak

    def per_pod(self, pods: int) -> dict[str, float]:
        """Bytes per pod each process's peak added over its size when the load began."""
        return {name: max(0, peak - self.before.get(name, 0)) / max(1, pods) for name, peak in self.peak.items()}

    def report(self, pods: int) -> str:
        """Largest first: "name 1.2 GB peak (3.4 KB/pod), ..."."""
        per_pod = self.per_pod(pods)
        largest = sorted(self.peak.items(), key=lambda kv: -kv[1])
        return ", ".join(
            f"{name} {peak / 1e9:.2f} GB peak ({per_pod[name] / 1000:.1f} KB/pod)" for name, peak in largest
        )


@dataclass
class CpuMeter:
    """CPU seconds of named processes over one phase: `start()`, the work, `stop()`."""

    pids: Mapping[str, int | None]
    before: dict[str, float] = field(default_factory=dict)
    used: dict[str, float] = field(default_factory=dict)

    def start(self) -> None:
        self.before = {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def stop(self) -> dict[str, float]:
        self.used = {name: cpu_seconds(pid) - self.before.get(name, 0.0) for name, pid in self.pids.items()}
        return self.used

    def report(self, pods: int) -> str:
        """The figure per pod and each process's share, busiest first: "X cpu-ms/pod [name a, ...]"."""
        busiest = sorted(self.used.items(), key=lambda kv: -kv[1])
        total = 1000 * sum(self.used.values()) / max(1, pods)
        parts = ", ".join(f"{name} {1000 * s / max(1, pods):.2f}" for name, s in busiest)
        return f"{total:.2f} cpu-ms/pod [{parts}]"


class Spies:
    """py-spy on each process, collapsed stacks into `folder`: 200 samples a second of the thread that holds
    the GIL (where the process's Python CPU goes; a thread waiting on I/O or a lock is not sampled)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, pids: Mapping[str, int | None], *, suffix: str = "") -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        binary = shutil.which("py-spy") or str(ROOT / ".tools" / "bin" / "py-spy")
        for name, pid in pids.items():
            if pid is None:
                continue
            out = self.folder / f"{name}{suffix}.txt"
            argv = [binary, "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "--gil", "-o", str(out)]
            self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.procs = []

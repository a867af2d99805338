"""Benchmark results as files: a JSON document per run of a benchmark, and a PNG of pods Running over
time with one line per system measured (benchmarks/plot.py), next to the figures each bench prints.

    report = BenchReport("e2e_gang_load", "E2E gang load: 10,000 pods on 1,000 nodes", params={...})
    report.add("tephra, 1 scheduler", {"pods_per_s": 231.0}, running=running_curve(times, start))
    json_path, png_path = report.write()

Files go to .artifacts/bench/ (git-ignored), or $TEPHRA_BENCH_OUT; each is named after the bench and
the UTC time it was written, so runs never overwrite one another.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from benchmarks.plot import Line, line_chart

ROOT: Final = Path(__file__).resolve().parents[1]
DEFAULT_DIR: Final = ROOT / ".artifacts" / "bench"
Figure = float | int | str | None


@dataclass
class Run:
    system: str  # what was measured, e.g. "tephra, 2 schedulers" or "volcano"
    figures: dict[str, Figure]
    running: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, pods counted)


@dataclass
class BenchReport:
    bench: str
    title: str
    params: Mapping[str, Any] = field(default_factory=dict)
    y_label: str = "pods Running"  # what the curves count (kube_bench: pods bound)
    runs: list[Run] = field(default_factory=list)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))

    def add(self, system: str, figures: Mapping[str, Any], running: Iterable[tuple[float, int]] = ()) -> Run:
        run = Run(system, {k: _figure(v) for k, v in figures.items()}, [(float(t), int(n)) for t, n in running])
        self.runs.append(run)
        return run

    def document(self) -> dict[str, Any]:
        return {
            "bench": self.bench,
            "title": self.title,
            "started": self.started.isoformat().replace("+00:00", "Z"),
            "host": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
            "params": {k: _figure(v) for k, v in self.params.items()},
            "counted": self.y_label,
            "runs": [
                {"system": r.system, "figures": r.figures, "running_over_time": [[t, n] for t, n in r.running]}
                for r in self.runs
            ],
        }

    def chart(self) -> bytes | None:
        """The PNG of pods Running over time, or None when no run recorded a curve."""
        lines = [Line(r.system, [(0.0, 0), *r.running]) for r in self.runs if r.running]
        if not lines:
            return None
        return line_chart(lines, title=self.title, x_label="seconds since the first submit", y_label=self.y_label)

    def write(self, directory: Path | None = None) -> list[Path]:
        """The JSON (and the PNG when there is a curve) in `directory`; the paths written."""
        out = directory or Path(os.environ.get("TEPHRA_BENCH_OUT") or DEFAULT_DIR)
        out.mkdir(parents=True, exist_ok=True)
        stem = f"{self.bench}-{self.started.strftime('%Y%m%dT%H%M%SZ')}"
        json_path = out / f"{stem}.json"
        json_path.write_text(json.dumps(self.document(), indent=2) + "\n")
        written = [json_path]
        png = self.chart()
        if png is not None:
            (out / f"{stem}.png").write_bytes(png)
            written.append(out / f"{stem}.png")
        return written


def running_curve(times: Iterable[float], start: float) -> list[tuple[float, int]]:
    """From the moments pods were first seen Running, the count Running at each of them since `start`."""
    return [(max(0.0, t - start), i) for i, t in enumerate(sorted(times), start=1)]


def _figure(value: Any) -> Figure:
    """A JSON-friendly figure: numbers and strings as they are, paths and the rest as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)

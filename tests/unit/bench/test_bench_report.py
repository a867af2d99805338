"""Benchmark results as files (benchmarks/report.py, plot.py) and benchmark progress (progress.py): the
JSON document, the PNG (decoded back and looked at), round axis ticks, and progress on a terminal and
in a log."""

from __future__ import annotations

import io
import json
from pathlib import Path

import matplotlib.image
import pytest

from benchmarks.plot import PALETTE, Line, line_chart
from benchmarks.progress import CLEAR_LINE, Progress
from benchmarks.report import BenchReport, running_curve


def decode_png(data: bytes) -> tuple[int, int, set[tuple[int, int, int]]]:
    """Width, height and the set of RGB colours of a PNG (read back with matplotlib's own reader)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    height, width = pixels.shape[:2]
    rgb = (pixels[:, :, :3] * 255).round().astype(int).reshape(-1, 3)
    return width, height, {(int(r), int(g), int(b)) for r, g, b in rgb}


def rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


def test_the_chart_draws_each_line_in_its_colour() -> None:
    lines = [Line("one", [(0, 0), (10, 100)]), Line("two", [(0, 0), (5, 100)])]
    width, height, colours = decode_png(line_chart(lines, title="t", x_label="x", y_label="y", width=400, height=300))
    assert (width, height) == (400, 300)
    assert rgb(PALETTE[0]) in colours and rgb(PALETTE[1]) in colours
    assert rgb(PALETTE[2]) not in colours  # a third colour only for a third line


def test_an_empty_or_single_point_chart_still_renders() -> None:
    assert decode_png(line_chart([], title="nothing", x_label="x", y_label="y", width=200, height=150))[:2] == (
        200,
        150,
    )
    _, _, colours = decode_png(line_chart([Line("dot", [(0, 0)])], title="one", x_label="x", y_label="y"))
    assert rgb(PALETTE[0]) in colours  # a lone point is drawn as a marker


def test_running_curve_counts_in_time_order() -> None:
    assert running_curve([12.5, 10.0, 11.0], start=10.0) == [(0.0, 1), (1.0, 2), (2.5, 3)]


def test_a_report_writes_its_json_and_png(tmp_path: Path) -> None:
    report = BenchReport("e2e", "E2E: 3 pods", params={"nodes": 2, "profile": tmp_path})
    report.add("tephra, 1 scheduler", {"pods_per_s": 1.5, "total_s": 2.0}, running=[(1.0, 1), (2.0, 3)])
    report.add("tephra, 2 schedulers", {"pods_per_s": 3.0}, running=[(0.5, 2), (1.0, 3)])
    written = report.write(tmp_path)
    assert [p.suffix for p in written] == [".json", ".png"]
    document = json.loads(written[0].read_text())
    assert document["bench"] == "e2e" and document["params"] == {"nodes": 2, "profile": str(tmp_path)}
    assert [r["system"] for r in document["runs"]] == ["tephra, 1 scheduler", "tephra, 2 schedulers"]
    assert document["runs"][0]["running_over_time"] == [[1.0, 1], [2.0, 3]]
    decode_png(written[1].read_bytes())


def test_a_report_without_a_curve_is_json_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEPHRA_BENCH_OUT", str(tmp_path / "out"))
    report = BenchReport("store", "Store throughput")
    report.add("nats kv", {"writes_per_s": 9000})
    written = report.write()
    assert [p.parent for p in written] == [tmp_path / "out"] and written[0].suffix == ".json"


def test_progress_in_a_log_prints_a_line_at_most_every_period() -> None:
    now = [0.0]
    out = io.StringIO()
    progress = Progress("placing pods", 1000, stream=out, clock=lambda: now[0], every_s=10, tty=False)
    for step in range(1, 31):
        now[0] = float(step)
        progress.update(step * 10)
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3  # at 10 s, 20 s and 30 s
    assert lines[-1] == "placing pods [######..............] 300/1,000  30% 10/s 0m30s"


def test_progress_on_a_terminal_rewrites_one_line_and_keeps_the_last() -> None:
    now = [0.0]
    out = io.StringIO()
    with Progress("pods Running", 4, stream=out, clock=lambda: now[0], tty=True) as progress:
        for done in range(1, 5):
            now[0] = float(done)
            progress.update(done)
            progress.update(done)  # within REDRAW_S of the last drawing: not drawn again
    text = out.getvalue()
    assert text.count(CLEAR_LINE) == 5 and text.endswith("4/4 100% 1/s 0m04s\n")

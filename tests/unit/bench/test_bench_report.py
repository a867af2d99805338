"""Benchmark results as files (benchmarks/report.py, plot.py) and benchmark progress (progress.py): the
JSON document, the PNG (decoded back and looked at), round axis ticks, and progress on a terminal and
in a log."""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path

import pytest

from benchmarks.plot import PALETTE, Line, line_chart, nice_ticks, thin, tick_label
from benchmarks.progress import CLEAR_LINE, Progress
from benchmarks.report import BenchReport, running_curve


def decode_png(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the RGB pixels of an 8-bit RGB PNG with filter 0 rows (what plot.py writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, width, height = 8, b"", 0, 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert (depth, color) == (8, 2)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + width * 3
    assert len(raw) == height * stride and all(raw[y * stride] == 0 for y in range(height))
    return width, height, b"".join(raw[y * stride + 1 : (y + 1) * stride] for y in range(height))


def pixel(pixels: bytes, width: int, x: int, y: int) -> tuple[int, ...]:
    return tuple(pixels[(y * width + x) * 3 : (y * width + x) * 3 + 3])


def test_the_chart_draws_each_line_in_its_colour_with_a_legend() -> None:
    lines = [Line("one", [(0, 0), (10, 100)]), Line("two", [(0, 0), (5, 100)])]
    width, height, pixels = decode_png(line_chart(lines, title="t", x_label="x", y_label="y", width=400, height=300))
    assert (width, height) == (400, 300)
    colours = {pixel(pixels, width, x, y) for x in range(width) for y in range(height)}
    assert PALETTE[0] in colours and PALETTE[1] in colours and (40, 40, 40) in colours  # lines, legend, text
    # The first line ends at the top-right of the plot area: x=10 is the last tick, y=100 the top one.
    assert pixel(pixels, width, 400 - 30 - 1, 60 + 1) == PALETTE[0]


def test_an_empty_or_single_point_chart_still_renders() -> None:
    decode_png(line_chart([], title="nothing", x_label="x", y_label="y", width=200, height=150))
    decode_png(line_chart([Line("dot", [(0, 0)])], title="one", x_label="x", y_label="y", width=200, height=150))


@pytest.mark.parametrize(
    ("high", "ticks"),
    [
        (100, [0, 20, 40, 60, 80, 100]),
        (2000, [0, 500, 1000, 1500, 2000]),
        (7.3, [0, 2, 4, 6, 8]),
        (0, [0, 1]),
    ],
)
def test_ticks_are_round_numbers_from_zero_past_the_highest_value(high: float, ticks: list[float]) -> None:
    assert nice_ticks(high) == ticks


def test_tick_labels_and_thinning() -> None:
    assert [tick_label(v) for v in (0, 2.5, 1500, 20_000, 3_000_000)] == ["0", "2.5", "1500", "20k", "3M"]
    points = [(float(i), float(i)) for i in range(10_001)]
    kept = thin(points, 100)
    assert len(kept) == 100 and kept[0] == points[0] and kept[-1] == points[-1]


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

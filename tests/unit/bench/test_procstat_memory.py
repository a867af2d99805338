"""The benchmarks' memory figures (benchmarks/procstat.py): peak resident size from /proc, and what a
load added per pod."""

from __future__ import annotations

import os

from benchmarks.procstat import MemoryMeter, peak_rss_bytes, rss_bytes


def test_a_live_process_has_a_resident_size_and_a_peak_no_smaller() -> None:
    assert 0 < rss_bytes(os.getpid()) <= peak_rss_bytes(os.getpid())


def test_an_unknown_process_reads_zero() -> None:
    assert rss_bytes(None) == peak_rss_bytes(None) == 0


def test_bytes_per_pod_are_what_the_load_added() -> None:
    meter = MemoryMeter({"scheduler": 1, "node-sim": 2})
    meter.before = {"scheduler": 100_000_000, "node-sim": 50_000_000}
    meter.peak = {"scheduler": 300_000_000, "node-sim": 40_000_000}
    assert meter.per_pod(100_000) == {"scheduler": 2_000.0, "node-sim": 0.0}
    assert meter.report(100_000) == "scheduler 0.30 GB peak (2.0 KB/pod), node-sim 0.04 GB peak (0.0 KB/pod)"

"""The machine-speed reference (benchmarks/machine.py): its workload stays the same work, and a figure
is expressed in references by the mean of the readings before and after (made-up readings)."""

from __future__ import annotations

from benchmarks.machine import CHECKSUM, ROUNDS, Speed, workload


def test_the_reference_workload_is_pinned() -> None:
    # A changed workload would make every older run's reference mean something else.
    assert workload() == CHECKSUM
    assert workload(ROUNDS // 2) != CHECKSUM


def test_a_figure_in_references_uses_the_mean_reading() -> None:
    speed = Speed(before_ms=40.0, after_ms=60.0)
    assert speed.mean_ms == 50.0
    assert speed.in_references(1.0) == 20.0  # one CPU second is twenty 50 ms references
    assert speed.describe() == "machine reference 40 ms before, 60 ms after (fixed workload)"

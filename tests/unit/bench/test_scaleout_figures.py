"""The scheduler scale-out benchmark's arithmetic (benchmarks/scaleout_figures.py), over made-up runs."""

from __future__ import annotations

import pytest

from benchmarks.scaleout_figures import (
    RunFigures,
    fixed_part,
    fixed_part_line,
    openings_line,
    scaleout_ratios,
    summary_line,
    together,
)


def run(
    k: int, *, seconds: float, cpu_s: float, cycles: float, pods: int = 1000, bound: int | None = None
) -> RunFigures:
    """A made-up run of k instances sharing `cpu_s` CPU seconds and `cycles` cycles evenly."""
    names = [f"scheduler-{i}" for i in range(k)]
    return RunFigures(
        instances=k,
        pods=pods,
        bound=pods if bound is None else bound,
        seconds=seconds,
        cpu_s={name: cpu_s / k for name in names},
        cycles={name: cycles / k for name in names},
    )


def test_a_run_gives_its_rate_cpu_per_pod_and_each_instances_cpu_per_cycle() -> None:
    made_up = RunFigures(
        instances=2,
        pods=1000,
        bound=1000,
        seconds=4.0,
        cpu_s={"scheduler-0": 3.0, "scheduler-1": 1.0},
        cycles={"scheduler-0": 30, "scheduler-1": 0},
    )
    assert made_up.pods_per_s == 250.0
    assert made_up.cpu_ms_per_pod == 4.0  # both instances' CPU, together
    # An instance that ran no cycle has no figure, and its CPU still counts in the mean's numerator.
    assert made_up.cycle_cpu_ms() == {"scheduler-0": 100.0, "scheduler-1": None}
    assert made_up.mean_cycle_cpu_ms == pytest.approx(4000 / 30)


def test_the_summary_line_is_each_k_over_k1_in_a_fixed_order_with_two_decimals() -> None:
    runs = {
        1: run(1, seconds=10.0, cpu_s=8.0, cycles=40),  # 100 pods/s, 8 cpu-ms/pod, 200 ms/cycle
        2: run(2, seconds=6.0, cpu_s=8.8, cycles=80),  # 166.7 pods/s, 8.8 cpu-ms/pod, 110 ms/cycle
        4: run(4, seconds=4.0, cpu_s=9.6, cycles=192),  # 250 pods/s, 9.6 cpu-ms/pod, 50 ms/cycle
    }
    assert scaleout_ratios(runs) == pytest.approx(
        {"k2_rate": 10 / 6, "k2_cpu": 1.1, "k4_rate": 2.5, "k4_cpu": 1.2, "k4_cycle": 0.25}
    )
    assert summary_line(runs) == "scaleout k2_rate=1.67 k2_cpu=1.10 k4_rate=2.50 k4_cpu=1.20 k4_cycle=0.25"


def test_fields_of_a_k_not_run_or_not_complete_are_left_out() -> None:
    base = run(1, seconds=10.0, cpu_s=8.0, cycles=40)
    assert summary_line({1: base, 2: run(2, seconds=5.0, cpu_s=8.0, cycles=80)}) == (
        "scaleout k2_rate=2.00 k2_cpu=1.00"
    )
    # k = 4 bound only half its pods before the timeout: no ratio of it is printed.
    unfinished = run(4, seconds=900.0, cpu_s=90.0, cycles=400, bound=500)
    assert summary_line({1: base, 4: unfinished}) == "scaleout"
    # Without a complete k = 1 there is nothing to divide by.
    assert summary_line({1: run(1, seconds=900.0, cpu_s=9.0, cycles=4, bound=10), 2: base}) == "scaleout"
    assert summary_line({2: base, 4: base}) == "scaleout"


def test_k4_cycle_is_left_out_when_a_run_counted_no_cycle() -> None:
    runs = {1: run(1, seconds=10.0, cpu_s=8.0, cycles=0), 4: run(4, seconds=5.0, cpu_s=8.0, cycles=100)}
    assert summary_line(runs) == "scaleout k4_rate=2.00 k4_cpu=1.00"


def test_runs_of_one_k_count_together_weighed_by_what_each_did() -> None:
    # k = 1 before the others on a fast machine, and after them on one half as fast.
    before = run(1, seconds=10.0, cpu_s=8.0, cycles=40)  # 100 pods/s, 8 cpu-ms/pod
    after = run(1, seconds=20.0, cpu_s=16.0, cycles=40)  # 50 pods/s, 16 cpu-ms/pod
    both = together([before, after])
    assert both.pods_per_s == pytest.approx(2000 / 30)  # every pod over every second
    assert both.cpu_ms_per_pod == pytest.approx(12.0)
    assert both.mean_cycle_cpu_ms == pytest.approx(24_000 / 80)
    assert both.complete
    k4 = run(4, seconds=6.0, cpu_s=12.0, cycles=40)  # run between them: 166.7 pods/s, 12 cpu-ms/pod
    assert summary_line({1: both, 4: k4}) == "scaleout k4_rate=2.50 k4_cpu=1.00 k4_cycle=1.00"
    # A run of the k that did not bind every pod leaves the k incomplete.
    assert not together([before, run(1, seconds=900.0, cpu_s=9.0, cycles=4, bound=10)]).complete


def test_the_mean_opening_per_cycle_and_its_share_of_one_instances() -> None:
    one = RunFigures(1, 1000, 1000, 10.0, {"s0": 5.0}, {"s0": 10}, opening_ms={"s0": 4000.0})
    four = RunFigures(
        4, 1000, 1000, 5.0, {f"s{i}": 2.0 for i in range(4)}, {f"s{i}": 5 for i in range(4)},
        opening_ms={f"s{i}": 500.0 for i in range(4)},
    )  # fmt: skip
    assert one.mean_opening_ms == 400.0 and four.mean_opening_ms == 100.0
    # Two runs of one k count together: every opening over every cycle.
    assert together([one, one]).mean_opening_ms == 400.0
    assert openings_line({1: one, 4: four}) == "opening per cycle: k=1 400 ms, k=4 100 ms (0.25 of k = 1)"
    assert openings_line({1: RunFigures(1, 10, 10, 1.0, {"s0": 1.0}, {})}) == "opening per cycle: no cycle"


def test_the_fixed_part_is_what_four_instances_add_over_one_divided_by_three() -> None:
    """Summed CPU = k * F + W: k = 1 spends 8 s on 1,000 pods and k = 4 spends 9.5 s, so F = 0.5 s and
    W = 7.5 s; k4_cpu <= 1.25 would need F <= 7.5 / 11 s."""
    runs = {1: run(1, seconds=10.0, cpu_s=8.0, cycles=40), 4: run(4, seconds=4.0, cpu_s=9.5, cycles=40)}
    assert fixed_part(runs) == pytest.approx((0.5, 7.5))
    assert fixed_part_line(runs) == (
        "fixed part per instance: F = 0.5 s of CPU, placing W = 7.5 s; k4_cpu <= 1.25 needs F <= W / 11 = 0.7 s"
    )
    # F at exactly W / 11 is k4_cpu 1.25.
    at_target = {1: run(1, seconds=10.0, cpu_s=12.0, cycles=40), 4: run(4, seconds=4.0, cpu_s=15.0, cycles=40)}
    fixed, placing = fixed_part(at_target) or (0.0, 0.0)
    assert fixed == pytest.approx(placing / 11)
    assert scaleout_ratios(at_target)["k4_cpu"] == pytest.approx(1.25)


def test_no_fixed_part_without_complete_runs_of_one_and_four() -> None:
    base = run(1, seconds=10.0, cpu_s=8.0, cycles=40)
    assert fixed_part({1: base}) is None
    assert fixed_part({1: base, 4: run(4, seconds=900.0, cpu_s=90.0, cycles=400, bound=500)}) is None
    assert fixed_part_line({1: base}) == "fixed part per instance: needs complete runs of k = 1 and k = 4"

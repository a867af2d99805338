"""The e2e benchmark's pacing line: the first and last stretch's rates and the longest stall."""

from __future__ import annotations

from benchmarks.pacing import describe_stalls, pacing, stalls


def test_a_load_that_slows_and_stalls_says_so() -> None:
    # 1,000 pods: the first 100 at 100 pods/s, a 7 s stall, then 50 pods/s to the end.
    times = [(i + 1) * 0.01 for i in range(100)]
    times += [times[-1] + 7.0 + (i + 1) * 0.02 for i in range(900)]
    got = pacing(times, start=0.0)
    assert got is not None
    assert got.window == 100
    assert round(got.first_rate) == 100
    assert round(got.last_rate) == 50
    assert round(got.longest_gap_s, 2) == 7.02
    assert (got.gap_ended_at_pod, round(got.gap_ended_at_s, 2)) == (101, 8.02)  # where to look in the logs
    assert "0.50x" in got.describe() and "pod 101" in got.describe()


def test_a_large_load_uses_stretches_of_a_hundred_thousand_and_none_without_pods() -> None:
    times = [i * 0.001 for i in range(1, 250_001)]
    got = pacing(times, start=0.0)
    assert got is not None and got.window == 100_000
    assert round(got.first_rate) == round(got.last_rate) == 1000
    assert pacing([], start=0.0) is None


def test_stalls_lists_every_quiet_time_longer_than_the_bound_with_its_end() -> None:
    times = [1.0, 2.0, 6.5, 7.0, 13.0]
    assert stalls(times, start=0.0, over_s=3.0) == [(6.5, 4.5), (13.0, 6.0)]
    assert describe_stalls(stalls(times, start=0.0, over_s=3.0)) == "4.5s ending at 6s, 6.0s ending at 13s"
    assert stalls(times, start=0.0, over_s=10.0) == [] and describe_stalls([]) == "none"

"""The retry loops' backoff: doubling to its cap, and defined for any count of failures."""

from __future__ import annotations

from vc_core import backoff


def test_it_doubles_from_the_base_up_to_the_cap() -> None:
    assert [backoff.capped(0.1, n, 1.0) for n in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_a_count_past_a_float_exponent_stays_at_the_cap() -> None:
    # 0.1 * 2 ** 1024 overflows a float: a loop that had failed that often through an outage crashed
    assert backoff.capped(0.1, 1_024, 10.0) == backoff.capped(0.1, 10**9, 10.0) == 10.0
    assert backoff.capped(0.1, -3, 10.0) == 0.1

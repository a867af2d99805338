"""PodGroup churn is batched: a burst of hints for one queue arms a single delayed pass."""

from __future__ import annotations

from vc_queue_controller.debounce import Debouncer


def test_burst_of_hints_arms_one_pass_and_a_pass_rearms() -> None:
    armed: list[tuple[str, float]] = []
    debouncer: Debouncer[str] = Debouncer(lambda key, delay: armed.append((key, delay)), delay_s=0.2)
    for _ in range(100):
        debouncer.hint("q1")
    debouncer.hint("q2")
    assert armed == [("q1", 0.2), ("q2", 0.2)]
    debouncer.passing("q1")
    debouncer.hint("q1")
    assert armed[-1] == ("q1", 0.2) and len(armed) == 3

"""PodGroup churn is batched: a burst of hints for one queue arms a single delayed pass."""

from __future__ import annotations

from vc_queue_controller.debounce import MAX_BATCH_S, PASS_SHARE, Debouncer


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


def test_the_delay_grows_with_the_cost_of_a_keys_pass_and_stays_bounded() -> None:
    armed: list[tuple[str, float]] = []
    debouncer: Debouncer[str] = Debouncer(lambda key, delay: armed.append((key, delay)), delay_s=0.2)
    debouncer.took("small", 0.001)  # a cheap pass: the base delay
    assert debouncer.delay_s("small") == 0.2
    debouncer.took("big", 0.05)  # a queue with tens of thousands of PodGroups
    assert debouncer.delay_s("big") == 0.05 * PASS_SHARE
    debouncer.hint("big")
    debouncer.hint("small")  # the big queue's cost does not slow the small one
    assert armed == [("big", 0.05 * PASS_SHARE), ("small", 0.2)]
    debouncer.took("big", 60.0)
    assert debouncer.delay_s("big") == MAX_BATCH_S
    debouncer.took("big", 0.001)  # cheap again: back to the base
    assert debouncer.delay_s("big") == 0.2

"""The one retry policy: which errors it retries, how long it waits (capped exponential backoff with
jitter), and when it gives up (tries spent, a deadline); a cancellation is never retried."""

from __future__ import annotations

import asyncio

import pytest

from vc_core.errors import Conflict, NotFound, PreconditionFailed, TemporaryError
from vc_core.retry import RetryPolicy


def test_waits_double_from_the_base_up_to_the_cap_without_jitter() -> None:
    policy = RetryPolicy((TemporaryError,), base_s=0.1, cap_s=1.0, jitter=0.0)
    assert [policy.delay_s(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_jitter_shortens_a_wait_by_at_most_its_fraction() -> None:
    policy = RetryPolicy((TemporaryError,), base_s=1.0, cap_s=8.0, jitter=0.25)
    assert policy.delay_s(3, draw=0.0) == 4.0
    assert policy.delay_s(3, draw=0.5) == 3.5
    assert 3.0 <= policy.delay_s(3) <= 4.0


def test_a_count_past_a_float_exponent_stays_at_the_cap() -> None:
    # 2 ** 1024 overflows a float: a loop that had failed that often through an outage must not crash
    policy = RetryPolicy((TemporaryError,), base_s=0.1, cap_s=10.0, jitter=0.0)
    assert policy.delay_s(1_025) == policy.delay_s(10**9) == 10.0


def test_it_gives_up_on_errors_it_does_not_retry_when_tries_are_spent_and_past_the_deadline() -> None:
    policy = RetryPolicy((TemporaryError, Conflict), base_s=1.0, cap_s=4.0, attempts=3, deadline_s=5.0, jitter=0.0)
    assert policy.next_delay(TemporaryError("down"), failures=1, elapsed_s=0.0) == 1.0
    assert policy.next_delay(Conflict("Queue", "q1", expected=2), failures=2, elapsed_s=1.0) == 2.0
    gone = NotFound("Job", "default/gone")
    assert policy.next_delay(gone, failures=1, elapsed_s=0.0) is None  # not a class it retries
    assert policy.next_delay(TemporaryError("down"), failures=3, elapsed_s=3.0) is None  # three tries made
    assert policy.next_delay(TemporaryError("down"), failures=2, elapsed_s=3.5) is None  # 3.5 + 2 > 5


async def test_call_retries_until_the_attempt_succeeds_and_reports_each_retry() -> None:
    policy = RetryPolicy((TemporaryError,), base_s=0.001, cap_s=0.004)
    outcomes: list[Exception | str] = [TemporaryError("a"), TemporaryError("b"), "done"]
    retries: list[tuple[str, int, float]] = []

    async def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    result = await policy.call(
        attempt, sleep=asyncio.sleep, on_retry=lambda error, n, delay: retries.append((str(error), n, delay))
    )
    assert result == "done"
    assert [(error, n) for error, n, _ in retries] == [("a", 1), ("b", 2)]
    assert 0.0008 <= retries[0][2] <= 0.001 and 0.0016 <= retries[1][2] <= 0.002


async def test_call_raises_the_last_error_once_its_tries_are_spent() -> None:
    policy = RetryPolicy((TemporaryError,), base_s=0.001, cap_s=0.001, attempts=3)
    tries: list[int] = []

    async def attempt() -> None:
        tries.append(len(tries) + 1)
        raise TemporaryError(f"try {len(tries)}")

    with pytest.raises(TemporaryError, match="try 3"):
        await policy.call(attempt, sleep=asyncio.sleep)
    assert tries == [1, 2, 3]


async def test_call_passes_an_error_it_does_not_retry_at_once() -> None:
    policy = RetryPolicy((TemporaryError,), base_s=0.001, cap_s=0.001)
    tries = 0

    async def attempt() -> None:
        nonlocal tries
        tries += 1
        raise NotFound("Job", "default/gone")

    with pytest.raises(NotFound):
        await policy.call(attempt, sleep=asyncio.sleep)
    assert tries == 1


async def test_call_stops_at_the_deadline_measured_on_its_clock() -> None:
    policy = RetryPolicy((TemporaryError,), base_s=1.0, cap_s=1.0, deadline_s=2.5, jitter=0.0)
    now = 0.0
    tries: list[float] = []

    async def advance(delay: float) -> None:  # the clock moves only by the policy's waits
        nonlocal now
        now += delay

    async def attempt() -> None:
        tries.append(now)
        raise TemporaryError("down")

    with pytest.raises(TemporaryError):
        await policy.call(attempt, sleep=advance, clock=lambda: now)
    assert tries == [0.0, 1.0, 2.0]  # a fourth try would start at 3.0, past the deadline


async def test_a_subclass_it_never_retries_is_passed_at_once() -> None:
    policy = RetryPolicy((Conflict,), base_s=0.001, cap_s=0.001, never=(PreconditionFailed,))
    assert policy.next_delay(Conflict("Pod", "default/p", expected=3), failures=1, elapsed_s=0.0) is not None
    tries = 0

    async def attempt() -> None:
        nonlocal tries
        tries += 1
        raise PreconditionFailed("Pod", "default/p", expected=3)

    with pytest.raises(PreconditionFailed):
        await policy.call(attempt, sleep=asyncio.sleep)
    assert tries == 1


async def test_a_cancellation_is_never_retried() -> None:
    policy = RetryPolicy((Exception,), base_s=0.001, cap_s=0.001)
    tries = 0

    async def attempt() -> None:
        nonlocal tries
        tries += 1
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await policy.call(attempt, sleep=asyncio.sleep)
    assert tries == 1


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"retry_on": ()}, "retry_on"),
        ({"base_s": 0.0}, "base_s"),
        ({"base_s": 2.0, "cap_s": 1.0}, "cap_s"),
        ({"jitter": 1.0}, "jitter"),
        ({"attempts": 0}, "attempts"),
        ({"deadline_s": 0.0}, "deadline_s"),
    ],
)
def test_a_policy_that_cannot_work_is_refused_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    settings: dict[str, object] = {"retry_on": (TemporaryError,), "base_s": 0.1, "cap_s": 1.0, **kwargs}
    with pytest.raises(ValueError, match=field):
        RetryPolicy(**settings)  # type: ignore[arg-type]

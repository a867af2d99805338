"""KeyedDispatcher: one key never runs twice at once, keys run in parallel, hints coalesce, failures retry."""

from __future__ import annotations

import asyncio
from collections import Counter

from vc_bus.dispatch import BASE_DELAY_S, KEY_RETRY, MAX_DELAY_S, KeyedDispatcher, backoff_s
from vc_core.errors import PermanentError, TemporaryError


async def run_until_idle(dispatcher: KeyedDispatcher[str], body) -> None:  # type: ignore[no-untyped-def]
    stop = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(dispatcher.run(stop))
        await body()
        async with asyncio.timeout(10):
            await dispatcher.wait_idle()
        stop.set()


async def test_same_key_is_serial_and_other_keys_run_in_parallel() -> None:
    active: Counter[str] = Counter()
    overlap: list[str] = []
    concurrent_peak = 0

    async def handle(key: str) -> None:
        nonlocal concurrent_peak
        active[key] += 1
        if active[key] > 1:
            overlap.append(key)
        concurrent_peak = max(concurrent_peak, sum(active.values()))
        await asyncio.sleep(0.02)
        active[key] -= 1

    dispatcher: KeyedDispatcher[str] = KeyedDispatcher(handle, workers=4)

    async def body() -> None:
        for _ in range(5):
            for key in ("a", "b", "c"):
                dispatcher.submit(key)
            await asyncio.sleep(0.005)

    await run_until_idle(dispatcher, body)
    assert overlap == []
    assert concurrent_peak >= 2


async def test_hints_for_a_waiting_key_coalesce_and_one_during_handling_reruns_once() -> None:
    calls: list[str] = []
    started = asyncio.Event()
    release = asyncio.Event()

    async def handle(key: str) -> None:
        calls.append(key)
        if len(calls) == 1:
            started.set()
            await release.wait()

    dispatcher: KeyedDispatcher[str] = KeyedDispatcher(handle, workers=2)

    async def body() -> None:
        dispatcher.submit("k")
        await started.wait()
        for _ in range(10):
            dispatcher.submit("k")  # arrives while "k" is being handled: one more pass, not ten
        release.set()

    await run_until_idle(dispatcher, body)
    assert calls == ["k", "k"]


async def test_temporary_errors_retry_and_permanent_errors_stop() -> None:
    attempts: Counter[str] = Counter()

    async def handle(key: str) -> None:
        attempts[key] += 1
        if key == "flaky" and attempts[key] < 3:
            raise TemporaryError("not yet", delay=0.01)
        if key == "broken":
            raise PermanentError("never")
        if key == "buggy" and attempts[key] < 2:
            raise RuntimeError("unexpected")

    dispatcher: KeyedDispatcher[str] = KeyedDispatcher(handle, workers=2)

    async def body() -> None:
        for key in ("flaky", "broken", "buggy"):
            dispatcher.submit(key)

    await run_until_idle(dispatcher, body)
    assert attempts == Counter({"flaky": 3, "broken": 1, "buggy": 2})
    stats = dispatcher.statistics()
    assert stats.handled == 2 and stats.waiting == 0 and stats.delayed == 0


async def test_submit_after_delays_a_key() -> None:
    seen: list[tuple[str, float]] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def handle(key: str) -> None:
        seen.append((key, loop.time() - start))

    dispatcher: KeyedDispatcher[str] = KeyedDispatcher(handle, workers=1)

    async def body() -> None:
        dispatcher.submit_after("later", 0.2)
        dispatcher.submit("now")

    await run_until_idle(dispatcher, body)
    assert [k for k, _ in seen] == ["now", "later"]
    assert seen[1][1] >= 0.2


def test_the_backoff_doubles_to_its_cap_and_stays_there_however_many_attempts() -> None:
    jitter = KEY_RETRY.jitter  # each wait is shortened by at most this fraction, so retries spread
    for attempt, full in ((1, BASE_DELAY_S), (2, 2 * BASE_DELAY_S), (3, 4 * BASE_DELAY_S)):
        assert (1 - jitter) * full <= backoff_s(attempt) <= full
    for attempt in (30, 1_025, 10**6):
        assert (1 - jitter) * MAX_DELAY_S <= backoff_s(attempt) <= MAX_DELAY_S

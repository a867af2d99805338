"""While a cycle opens, the cache leaves the watches' entries unapplied (they wait in the server) and
catches up once the cycle hands over its first binds: the opening gets the GIL (cache.HOLD_MAX_S)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any
from unittest import mock

import pytest

from tests.unit.bench.bench_pods import running_gang_pods
from tests.unit.scheduler_service.service_builders import offline_loop
from tests.unit.scheduler_service.test_loop import cache_with_one_gang
from vc_bus.kvwatch import RawEntry
from vc_core.store import WatchOp
from vc_scheduler import cache as cache_module
from vc_scheduler import loop as loop_module
from vc_scheduler import shard_feed
from vc_scheduler.cache import SchedulerCache


def _feed(entries: list[RawEntry]) -> Any:
    async def watch(_js: Any, _bucket: str, *_where: Any) -> AsyncIterator[RawEntry]:
        for entry in entries:
            yield entry
            await asyncio.sleep(0)

    return watch


async def _soon(condition: Any, within_s: float = 5.0) -> bool:
    """Whether `condition()` holds within `within_s` (looked at every few milliseconds)."""
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


ENTRIES = [RawEntry(WatchOp.PUT, i, key, value) for i, (key, value) in enumerate(running_gang_pods(20, nodes=2), 1)]
ENTRIES.append(RawEntry(WatchOp.SYNCED, len(ENTRIES)))


def test_a_held_cache_applies_no_entry_until_released_then_all_in_order() -> None:
    async def scenario() -> None:
        cache, shutdown = SchedulerCache(), asyncio.Event()
        cache.hold()
        with mock.patch.object(shard_feed, "watch_bucket", _feed(ENTRIES)):
            following = asyncio.create_task(cache.follow(None, "Pod", shutdown))
            await asyncio.sleep(0.05)
            assert cache.held and not cache.pods
            cache.release()
            assert await _soon(lambda: len(cache.pods) == len(ENTRIES) - 1)
            assert not cache.held
            assert cache.followed["Pod"] == len(ENTRIES) - 1
            shutdown.set()
            await following

    asyncio.run(scenario())


def test_a_hold_lapses_after_its_longest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "HOLD_MAX_S", 0.05)

    async def scenario() -> None:
        cache, shutdown = SchedulerCache(), asyncio.Event()
        cache.hold()
        with mock.patch.object(shard_feed, "watch_bucket", _feed(ENTRIES)):
            following = asyncio.create_task(cache.follow(None, "Pod", shutdown))
            assert await _soon(lambda: len(cache.pods) == len(ENTRIES) - 1)  # never released: the hold lapsed
            shutdown.set()
            await following

    asyncio.run(scenario())


def test_a_cycle_holds_the_cache_while_it_opens_and_releases_it_with_its_first_binds() -> None:
    held_while_planning: list[bool] = []
    plan_cycle = loop_module.plan_cycle

    def planning(*args: Any) -> Any:
        held_while_planning.append(cache.held)
        return plan_cycle(*args)

    async def scenario() -> None:
        loop = offline_loop(cache)
        with mock.patch.object(loop_module, "plan_cycle", planning):
            result = await loop.run_once()
        assert set(result.binds) == {"ns/a0", "ns/a1"}
        assert held_while_planning == [True] and not cache.held

    cache = cache_with_one_gang()
    asyncio.run(scenario())

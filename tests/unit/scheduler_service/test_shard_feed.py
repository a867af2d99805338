"""The cache's pods watch over its instance's shards (shard_feed.ShardFeed), against a scripted watch: it
opens only once told which shards, resumes after the last revision when it loses shards, and reads
every covered shard from its start when it gains one, dropping what that read did not deliver."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any
from unittest import mock

import msgspec

from vc_bus.kvwatch import RawEntry
from vc_bus.objects import storage_key
from vc_core.store import WatchOp
from vc_proto import subjects
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import SHARDS, shard_of_group, shard_of_key
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION
from vc_scheduler import shard_feed
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.shard_feed import ALL_SHARDS, shard_filters


def pod_entry(revision: int, name: str, group: str) -> RawEntry:
    pod = Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", annotations={GROUP_NAME_ANNOTATION: group}),
        spec=PodSpec(containers=[Container(name="main", image="busybox")]),
    )
    return RawEntry(WatchOp.PUT, revision, storage_key(pod), msgspec.json.encode(pod))


def two_groups() -> tuple[str, str]:
    first = "g0"
    second = next(f"g{i}" for i in range(1, 100) if shard_of_group("ns", f"g{i}") != shard_of_group("ns", first))
    return first, second


class ScriptedWatch:
    """Each opened watch yields the next script's entries, then waits (a live watch with nothing new)."""

    def __init__(self, scripts: list[list[RawEntry]]) -> None:
        self.scripts = scripts
        self.opened: list[tuple[list[str], int]] = []

    async def __call__(self, _js: Any, bucket: str, filters: list[str], start: int) -> AsyncIterator[RawEntry]:
        if bucket == subjects.bucket("PodGroup"):  # (no PodGroup: each read from the start ends at once)
            if start == 0:
                yield RawEntry(WatchOp.SYNCED, 0)
            await asyncio.Event().wait()
        self.opened.append((filters, start))
        for entry in self.scripts.pop(0) if self.scripts else []:
            yield entry
            await asyncio.sleep(0)
        await asyncio.Event().wait()


def cover(cache: SchedulerCache, shards: frozenset[int]) -> None:
    cache.regroup(lambda key: shard_of_key(key) in shards, lambda _node: False, shards)


async def settle(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never settled")


def test_the_watch_follows_the_covered_shards_through_a_loss_and_a_gain() -> None:
    a, b = two_groups()
    sa, sb = shard_of_group("ns", a), shard_of_group("ns", b)
    watch = ScriptedWatch(
        [
            [pod_entry(1, "a", a), pod_entry(2, "b", b), RawEntry(WatchOp.SYNCED, 2)],
            [pod_entry(4, "b-late", b)],  # (delivered by the watch over the lost shard: ignored)
            # From the start again: "a" is not delivered (deleted, its delete purged meanwhile).
            [pod_entry(2, "b", b), pod_entry(4, "b-late", b), RawEntry(WatchOp.SYNCED, 6)],
        ]
    )

    async def scenario() -> None:
        cache, shutdown = SchedulerCache(share_only=True), asyncio.Event()
        with mock.patch.object(shard_feed, "watch_bucket", watch):
            following = asyncio.gather(*(cache.follow(None, kind, shutdown) for kind in ("Pod", "PodGroup")))
            await asyncio.sleep(0.02)
            assert watch.opened == []  # nothing read before the loop says which shards

            cover(cache, ALL_SHARDS)
            await settle(cache.synced["Pod"].is_set)
            assert watch.opened == [([">"], 0)] and sorted(cache.pods) == ["ns/a", "ns/b"]
            assert cache.followed["Pod"] == 2

            cover(cache, frozenset({sa}))  # lost b's shard: resumed after revision 2, b dropped
            await settle(lambda: len(watch.opened) == 2)
            assert watch.opened[1] == (shard_filters(frozenset({sa})), 2)
            assert watch.opened[1][0] == [subjects.pod_shard_filter(sa)]
            await asyncio.sleep(0.02)
            assert sorted(cache.pods) == ["ns/a"] and not cache.gone() and cache.synced["Pod"].is_set()

            cover(cache, frozenset({sa, sb}))  # gained b's shard: every covered shard from its start
            assert not cache.holds(frozenset({sa})) and not cache.holds_covered()  # (at once, before the reopen)
            await settle(lambda: len(watch.opened) == 3 and cache.synced["Pod"].is_set())
            assert watch.opened[2] == (shard_filters(frozenset({sa, sb})), 0)
            assert sorted(cache.pods) == ["ns/b", "ns/b-late"]
            assert cache.gone() == {"uid-a"}  # not delivered by a read from the start: deleted
            assert cache.followed["Pod"] == 6
            shutdown.set()
            await following

    asyncio.run(scenario())


def test_until_the_read_from_the_start_ends_the_cache_does_not_hold_its_shards() -> None:
    a, _ = two_groups()
    watch = ScriptedWatch([[pod_entry(1, "a", a)]])  # (its SYNCED not yet come)

    async def scenario() -> None:
        cache, shutdown = SchedulerCache(share_only=True), asyncio.Event()
        with mock.patch.object(shard_feed, "watch_bucket", watch):
            following = asyncio.gather(*(cache.follow(None, kind, shutdown) for kind in ("Pod", "PodGroup")))
            cover(cache, frozenset(range(SHARDS)))
            await settle(lambda: "ns/a" in cache.pods)
            assert not cache.holds(frozenset({shard_of_group("ns", a)})) and not cache.holds_covered()
            assert cache.followed.get("Pod", 0) == 0  # each key's last value so far is no revision followed
            assert not await cache.until_holds(frozenset({shard_of_group("ns", a)}), 0.05)
            cache.apply("Pod", RawEntry(WatchOp.SYNCED, 1))
            assert cache.holds(frozenset({shard_of_group("ns", a)})) and cache.holds_covered()
            shutdown.set()
            await following

    asyncio.run(scenario())

"""A scheduler instance's cache is sent the pods of the shards it owns only, on a real nats-server, as
the scheduler's identity: the watch opens once told which shards, reopens when they change (without
reading kept shards again when it only loses some), and "followed to R" holds past the covered shards'
last change (shard_feed.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import msgspec
import pytest
from nats.aio.client import Client

from tests.integration.test_pod_shard_keys import pod
from tests.support.secure import session_bus
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_proto import subjects
from vc_proto.core import Pod
from vc_proto.pod_shards import shard_of_group, shard_of_key
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.shard_feed import FollowedPods

pytestmark = [pytest.mark.nats]
NAMESPACE = "team-a"


def groups_in_distinct_shards(count: int) -> list[str]:
    out: list[str] = []
    for i in range(1000):
        name = f"g{i}"
        if all(shard_of_group(NAMESPACE, name) != shard_of_group(NAMESPACE, o) for o in out):
            out.append(name)
        if len(out) == count:
            return out
    raise AssertionError("not enough shards")


def shard(group: str) -> int:
    return shard_of_group(NAMESPACE, group)


@pytest.fixture
async def scheduler_nc(nats_server: NatsServer) -> AsyncIterator[Client]:
    async with connect(nats_server.url, name="scheduler", credentials=session_bus().credentials("scheduler")) as nc:
        yield nc


def cover(cache: SchedulerCache, shards: frozenset[int]) -> None:
    """What the loop does when its share changes (no node of its own here)."""
    cache.regroup(lambda key: shard_of_key(key) in shards, lambda _node: False, shards)


async def until(condition: Callable[[], bool], within_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not within the time"
        await asyncio.sleep(0.01)


async def test_an_instance_is_sent_its_shards_pods_only_and_follows_a_change_of_them(
    nats_store: NatsStore, scheduler_nc: Client
) -> None:
    kept, lost, gained = groups_in_distinct_shards(3)
    written: dict[str, int] = {}  # group -> the revision of its last pod's write
    for group in (kept, lost, gained):
        for i in range(3):
            made = await nats_store.create(pod(f"{group}-{i}", group))
            written[group] = int(made.metadata.resource_version or 0)
    cache, shutdown = SchedulerCache(share_only=True), asyncio.Event()
    js = scheduler_nc.jetstream()
    pods = FollowedPods(js, cache)
    following = asyncio.gather(*(cache.follow(js, kind, shutdown) for kind in ("Pod", "PodGroup")))
    try:
        await asyncio.sleep(0.2)
        assert not cache.pods and not cache.synced["Pod"].is_set()  # nothing read before it is told which

        cover(cache, frozenset({shard(kept), shard(lost)}))
        await until(cache.synced["Pod"].is_set)
        assert sorted(cache.pods) == sorted(f"{NAMESPACE}/{g}-{i}" for g in (kept, lost) for i in range(3))
        newest_covered = max(written[kept], written[lost])
        await nats_store.create(pod("late", gained))  # past every covered change: never sent to it
        end = (await js.stream_info(f"KV_{subjects.bucket('Pod')}")).state.last_seq
        assert end > newest_covered > 0
        assert await pods.last_revision() == newest_covered
        assert await pods.followed(end, timeout_s=2.0)  # min(R, the covered shards' newest)

        cover(cache, frozenset({shard(kept)}))  # a member joined: it keeps one shard of the two
        assert sorted(cache.pods) == [f"{NAMESPACE}/{kept}-{i}" for i in range(3)]
        assert not cache.gone()  # dropped, not deleted
        assert cache.synced["Pod"].is_set()  # (resumed after the last revision: nothing read again)
        await relabel(nats_store, f"{kept}-0")
        await relabel(nats_store, f"{lost}-0")
        await until(lambda: cache.pods[f"{NAMESPACE}/{kept}-0"].labels == {"tier": "x"})
        assert f"{NAMESPACE}/{lost}-0" not in cache.pods

        cover(cache, frozenset({shard(kept), shard(gained)}))  # a member left: it takes a shard
        assert not cache.synced["Pod"].is_set()  # reading the covered shards from their start
        await until(cache.synced["Pod"].is_set)
        assert sorted(cache.pods) == sorted(
            [f"{NAMESPACE}/{kept}-{i}" for i in range(3)]
            + [f"{NAMESPACE}/{gained}-{i}" for i in range(3)]
            + [f"{NAMESPACE}/late"]
        )
        assert cache.pods[f"{NAMESPACE}/{kept}-0"].labels == {"tier": "x"}
        assert cache.holds(frozenset({shard(kept), shard(gained)}))
        assert not cache.holds(frozenset({shard(lost)}))
    finally:
        shutdown.set()
        await following


async def relabel(store: NatsStore, name: str) -> None:
    current = await store.get(Pod, NAMESPACE, name)
    meta = msgspec.structs.replace(current.metadata, labels={"tier": "x"})
    await store.update(msgspec.structs.replace(current, metadata=meta))

"""The lean pull consumer under every watch, against a real nats-server: batches end to end, nothing lost
when a delivery goes missing, when the consumer is deleted or when the link drops, and an idle watch
keeps its consumer (heartbeats, not polling)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import nats
import pytest
from nats.aio.client import Client
from nats.js.kv import KeyValue

from tests.chaos.proxy import FaultProxy
from tests.support.services import eventually
from vc_bus import pull
from vc_bus.connection import connect
from vc_bus.kvwatch import RawEntry, watch_bucket
from vc_bus.rawsub import RawDeliveryClient
from vc_bus.server import NatsServer
from vc_core.store import WatchOp
from vc_proto import subjects

pytestmark = [pytest.mark.nats, pytest.mark.integration]


async def bucket(nc: Client, name: str = "t") -> KeyValue:
    return await nc.jetstream().create_key_value(bucket=name, history=1)


class Seen:
    """What one watch yielded, in order, and a way to wait for a condition on it."""

    def __init__(self) -> None:
        self.entries: list[RawEntry] = []
        self.changed = asyncio.Event()

    async def follow(self, source: AsyncIterator[RawEntry]) -> None:
        async for entry in source:
            self.entries.append(entry)
            self.changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(30):
            while not condition():
                self.changed.clear()
                await self.changed.wait()

    def puts(self) -> list[str]:
        return [e.key for e in self.entries if e.op is WatchOp.PUT]


def async_true(condition: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return condition()

    return check


async def consumers(nc: Client, stream: str) -> list[str]:
    return [c.name for c in await nc.jetstream().consumers_info(stream)]


async def test_replay_and_live_entries_cross_many_batches_in_order_exactly_once(
    nc: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pull, "BATCH", 16)
    kv = await bucket(nc)
    for i in range(100):
        await kv.put(f"k{i:03d}", b"old")
    for i in range(0, 100, 2):
        await kv.put(f"k{i:03d}", b"new")  # superseded values are not replayed
    await kv.delete("k001")
    seen = Seen()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(seen.follow(watch_bucket(nc.jetstream(), "t")))
        await seen.until(lambda: any(e.op is WatchOp.SYNCED for e in seen.entries))
        for i in range(100, 150):
            await kv.put(f"k{i:03d}", b"live")
        await seen.until(lambda: len(seen.puts()) == 149)
        task.cancel()
    revisions = [e.revision for e in seen.entries if e.op is not WatchOp.SYNCED]
    assert revisions == sorted(set(revisions))
    assert sorted(seen.puts()) == [f"k{i:03d}" for i in range(150) if i != 1]
    assert [e.key for e in seen.entries if e.op is WatchOp.DELETE] == ["k001"]
    synced = next(i for i, e in enumerate(seen.entries) if e.op is WatchOp.SYNCED)
    assert len([e for e in seen.entries[:synced] if e.op is WatchOp.PUT]) == 99


async def test_a_lost_delivery_is_noticed_and_the_watch_resumes_after_it(
    nc: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delivery that never reaches the reader (as when the link drops under it): the next one's
    consumer sequence shows the gap, or, when nothing follows, the next idle heartbeat does."""
    monkeypatch.setattr(pull, "HEARTBEAT_S", 0.2)
    assert isinstance(nc, RawDeliveryClient)
    kv = await bucket(nc)
    await kv.put("a", b"1")
    seen = Seen()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(seen.follow(watch_bucket(nc.jetstream(), "t")))
        await seen.until(lambda: seen.puts() == ["a"])
        for lost, then in (("b", "c"), ("d", None)):
            ((sid, handler),) = (
                (s, h)
                for s, h in nc._raw_handlers.items()
                if isinstance(getattr(h, "__self__", None), pull.PullConsumer)
            )
            del nc._raw_handlers[sid]  # the next delivery goes elsewhere: lost for the watch
            await kv.put(lost, b"1")
            queue = nc._subs[sid]._pending_queue
            await eventually(async_true(lambda queue=queue: queue.qsize() > 0))  # the delivery arrived, and went astray
            nc._raw_handlers[sid] = handler
            if then is not None:
                await kv.put(then, b"1")
            await seen.until(lambda lost=lost: lost in seen.puts())
        task.cancel()
    assert seen.puts() == ["a", "b", "c", "d"]


async def test_a_deleted_consumer_is_replaced_and_nothing_is_missed(nc: Client) -> None:
    kv = await bucket(nc)
    seen = Seen()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(seen.follow(watch_bucket(nc.jetstream(), "t")))
        await seen.until(lambda: bool(seen.entries))  # SYNCED (empty bucket)
        await kv.put("before", b"1")
        await seen.until(lambda: seen.puts() == ["before"])
        (name,) = await consumers(nc, "KV_t")
        await nc.jetstream().delete_consumer("KV_t", name)
        for i in range(5):
            await kv.put(f"after-{i}", b"1")
        await seen.until(lambda: len(seen.puts()) == 6)
        task.cancel()
    assert seen.puts() == ["before", *(f"after-{i}" for i in range(5))]


async def test_a_watch_over_some_shards_is_sent_those_only_and_resumes_over_them(nc: Client) -> None:
    """One consumer over several filters (a scheduler instance's shards of the pods): the replay, the
    live entries and the resume after its consumer is lost cover those shards and nothing else."""
    kv = await bucket(nc)
    for shard in range(4):
        await kv.put(subjects.pod_key("ns", shard, f"old-{shard}"), b"1")
    await kv.put(subjects.pod_key("ns", 1, "gone"), b"1")
    await kv.delete(subjects.pod_key("ns", 1, "gone"))
    mine = [subjects.pod_shard_filter(shard) for shard in (1, 3)]
    seen = Seen()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(seen.follow(watch_bucket(nc.jetstream(), "t", mine)))
        await seen.until(lambda: any(e.op is WatchOp.SYNCED for e in seen.entries))
        assert sorted(seen.puts()) == ["ns.1.old-1", "ns.3.old-3"]
        assert [e.key for e in seen.entries if e.op is WatchOp.DELETE] == ["ns.1.gone"]
        for shard in range(4):
            await kv.put(subjects.pod_key("ns", shard, f"live-{shard}"), b"1")
        await seen.until(lambda: len(seen.puts()) == 4)
        (name,) = await consumers(nc, "KV_t")
        await nc.jetstream().delete_consumer("KV_t", name)
        for shard in range(4):
            await kv.put(subjects.pod_key("ns", shard, f"after-{shard}"), b"1")
        await seen.until(lambda: len(seen.puts()) == 6)
        task.cancel()
    assert seen.puts()[2:] == ["ns.1.live-1", "ns.3.live-3", "ns.1.after-1", "ns.3.after-3"]
    revisions = [e.revision for e in seen.entries if e.op is not WatchOp.SYNCED]
    assert revisions == sorted(revisions)


def test_a_watch_over_no_filter_is_refused() -> None:
    with pytest.raises(ValueError, match="key_filter"):
        watch_bucket(None, "t", [])  # type: ignore[arg-type]


async def test_writes_while_the_link_is_down_arrive_after_it_heals(nats_server: NatsServer) -> None:
    proxy = await FaultProxy(nats_server.port).start()
    try:
        async with connect(nats_server.url, name="writer") as writer, connect(proxy.url, name="watcher") as watcher:
            kv = await bucket(writer)
            seen = Seen()
            async with asyncio.TaskGroup() as tg:
                task = tg.create_task(seen.follow(watch_bucket(watcher.jetstream(), "t")))
                await seen.until(lambda: bool(seen.entries))
                proxy.drop()  # deliveries to the watcher vanish; its connection looks open
                for i in range(20):
                    await kv.put(f"k{i}", b"1")
                await asyncio.sleep(0.2)
                proxy.heal()  # reset: the watcher reconnects
                await seen.until(lambda: len(seen.puts()) == 20)
                task.cancel()
            assert seen.puts() == [f"k{i}" for i in range(20)]
    finally:
        await proxy.close()


async def test_an_idle_watch_keeps_its_consumer(nc: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle, the server's heartbeats keep the watch alive: no request per tick, no new consumer."""
    monkeypatch.setattr(pull, "HEARTBEAT_S", 0.1)
    monkeypatch.setattr(pull, "SILENCE_S", 0.35)
    monkeypatch.setattr(pull, "TICK_S", 0.05)
    await bucket(nc)
    seen = Seen()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(seen.follow(watch_bucket(nc.jetstream(), "t")))
        await seen.until(lambda: bool(seen.entries))
        first = await consumers(nc, "KV_t")
        before = nc.stats["out_msgs"]
        await asyncio.sleep(1.5)  # many heartbeat periods
        assert await consumers(nc, "KV_t") == first
        assert nc.stats["out_msgs"] - before <= 2  # the consumers_info request, nothing per tick
        task.cancel()


async def test_a_stock_nats_client_watches_the_same_way(nats_server: NatsServer) -> None:
    """vcctl connects with plain nats-py: the consumer falls back to a callback subscription."""
    plain = await nats.connect(nats_server.url)
    try:
        kv = await bucket(plain)
        await kv.put("a", b"1")
        seen = Seen()
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(seen.follow(watch_bucket(plain.jetstream(), "t")))
            await seen.until(lambda: seen.puts() == ["a"])
            await kv.delete("a")
            await kv.put("b", b"2")
            await seen.until(lambda: seen.puts() == ["a", "b"])
            task.cancel()
        assert [e.op for e in seen.entries] == [WatchOp.PUT, WatchOp.SYNCED, WatchOp.DELETE, WatchOp.PUT]
    finally:
        await plain.close()

"""The store survives a nats-server restart: data persists, watches resume with nothing missed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.support.waiting import eventually
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import AlreadyExists, NotFound, TemporaryError
from vc_core.store import WatchOp
from vc_proto.core import CORE_V1, Pod
from vc_proto.meta import ObjectMeta

pytestmark = [pytest.mark.nats, pytest.mark.integration]


def pod(name: str) -> Pod:
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace="default"))


async def test_watch_resumes_after_server_restart_without_gaps(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="writer") as writer_nc, connect(server.url, name="watcher") as watch_nc:
            writer, watcher = NatsStore(writer_nc), NatsStore(watch_nc)
            await writer.ensure()
            seen: set[str] = set()
            synced = asyncio.Event()

            async def follow() -> None:
                async for event in watcher.watch(Pod):
                    if event.op is WatchOp.SYNCED:
                        synced.set()
                    elif event.op is WatchOp.PUT:
                        seen.add(event.name)

            async with asyncio.TaskGroup() as tg:
                task = tg.create_task(follow(), name="follow")
                for i in range(20):
                    await writer.create(pod(f"before-{i}"))
                await asyncio.wait_for(synced.wait(), 10)
                server.restart()
                # Writes retry until the client has reconnected to the restarted server.
                for i in range(20):
                    await _retry(lambda i=i: writer.create(pod(f"after-{i}")))
                expected = {f"before-{i}" for i in range(20)} | {f"after-{i}" for i in range(20)}
                await eventually(lambda: seen == expected, timeout=30, interval=0.05, what="every pod watched")
                task.cancel()
            items, _ = await writer.list(Pod)
            assert {p.metadata.name for p in items} == expected
    finally:
        server.stop()


async def test_data_survives_a_server_kill(tmp_path: Path) -> None:
    server = NatsServer(tmp_path / "nats")
    server.start()
    async with connect(server.url, name="w") as nc:
        store = NatsStore(nc)
        await store.ensure()
        for i in range(10):
            await store.create(pod(f"p{i}"))
    server.kill()
    server.start()
    try:
        async with connect(server.url, name="r") as nc:
            items, _ = await NatsStore(nc).list(Pod)
            assert len(items) == 10
    finally:
        server.stop()


async def test_a_request_no_server_answers_is_a_temporary_error(tmp_path: Path) -> None:
    """Callers retry TemporaryError (an API reply says "unavailable", a dispatcher backs off); the
    transport's own timeout used to reach them instead."""
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        async with connect(server.url, name="w") as nc:
            store = NatsStore(nc, timeout=0.5)
            await store.ensure()
            created = await store.create(pod("p"))
            server.stop()
            with pytest.raises(TemporaryError, match="store get: NATS did not answer"):
                await store.get(Pod, "default", "p")
            with pytest.raises(TemporaryError, match=r"store update: NATS did not answer .*read before retrying"):
                await store.update(created)
            with pytest.raises(TemporaryError, match=r"store create: NATS did not answer .*read before retrying"):
                await store.create(pod("q"))
            with pytest.raises(TemporaryError, match="store update: NATS did not answer"):  # a bind is an update
                await store.bind(created, "node-1")
            with pytest.raises(TemporaryError, match=r"store delete: NATS did not answer .*read before retrying"):
                await store.delete(Pod, "default", "p")
            server.start()
            await eventually(lambda: nc.is_connected, timeout=30, interval=0.05, what="reconnected")
            with pytest.raises(NotFound):  # an answer again: what is absent is NotFound, as before
                await _retry(lambda: store.get(Pod, "default", "absent"), retry_not_found=False)
    finally:
        server.stop()


async def _retry(op: object, attempts: int = 100, *, retry_not_found: bool = True) -> object:
    for _ in range(attempts):
        try:
            return await op()  # type: ignore[operator]
        except AlreadyExists:  # the first attempt landed but its reply was lost in the restart
            return None
        except NotFound:
            if not retry_not_found:
                raise
            await asyncio.sleep(0.1)
        except Exception:
            await asyncio.sleep(0.1)
    return await op()  # type: ignore[operator]

"""Shared fixtures: a real nats-server per test (35 ms to start), connections and stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A real nats-server with JetStream on file storage, alone for this test."""
    server = NatsServer(tmp_path / "nats")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def nc(nats_server: NatsServer) -> AsyncIterator[Client]:
    async with connect(nats_server.url, name="test") as client:
        yield client


@pytest.fixture
async def nats_store(nc: Client) -> NatsStore:
    store = NatsStore(nc)
    await store.ensure()
    return store

"""Shared fixtures: a real nats-server per test (35 ms to start), connections and stores.

The servers are closed as `vcctl up`'s is (tests/support/secure.py): NKey identities with their
permissions, TLS; services started by tests connect as themselves; the test code is the `harness`."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client

from tests.kube.summary import pytest_collection_finish, pytest_terminal_summary  # noqa: F401 (kube tests run)
from tests.support.secure import open_test_bus, session_bus
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore

# Test modules are imported with --import-mode=importlib (so equal basenames in different folders never
# clash); the per-area builder modules (jc_builders, queue_builders...) are imported by plain name.
for _area in sorted((Path(__file__).parent / "unit").iterdir()):
    if _area.is_dir() and str(_area) not in sys.path:
        sys.path.append(str(_area))


@pytest.fixture(scope="session", autouse=True)
def test_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's identities and CA, made once (tests/support/secure.py)."""
    open_test_bus(tmp_path_factory.mktemp("bus-auth"))
    yield


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A real nats-server with JetStream on file storage, closed (identities, TLS), alone for this test."""
    server = session_bus().server(tmp_path / "nats")
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

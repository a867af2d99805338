"""Shared fixtures: a real nats-server per test (35 ms to start), connections and stores.

The servers are closed as `vcctl up`'s is (tests/support/secure.py): NKey identities with their
permissions, TLS; services started by tests connect as themselves; the test code is the `harness`."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client

from tests.kube.summary import pytest_collection_finish, pytest_terminal_summary  # noqa: F401 (kube tests run)
from tests.support import leaks
from tests.support.secure import open_test_bus, session_bus
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore


@pytest.fixture(scope="session", autouse=True)
def test_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session's identities and CA, made once (tests/support/secure.py)."""
    open_test_bus(tmp_path_factory.mktemp("bus-auth"))
    yield


@pytest.fixture(autouse=True)
def no_leaked_processes_or_tasks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test that leaves a process it started running, or (an async test) a task pending.

    Set up before the test's other function fixtures and so torn down after them: what they stop is gone
    by then. Wider fixtures (a module's server) are set up before it and are not counted."""
    before = leaks.live_descendants()
    if inspect.iscoroutinefunction(request.function):
        request.getfixturevalue("no_leaked_tasks")
    yield
    leaked = leaks.leaked_processes(before)
    if leaked:
        leaks.kill(leaked)
        pytest.fail("the test left processes running: " + "; ".join(child.describe() for child in leaked))


@pytest.fixture
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Requested by the fixture above for async tests only: it runs on the test's own event loop."""
    yield
    leaked = await leaks.leaked_tasks()
    if leaked:
        pytest.fail("the test left asyncio tasks pending: " + "; ".join(leaked))


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

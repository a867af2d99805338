"""The relay mirrors only the Secrets and ConfigMaps Tephra made (its label), checked on the real
apiserver: a Secret of the cluster's never reaches NATS, not at the first list, not from the watch,
and one an older relay had mirrored is removed from the bucket."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client

from tests.support.secure import session_bus
from tests.support.services import eventually
from vc_bus.connection import connect
from vc_bus.store import NatsStore
from vc_core.errors import NotFound
from vc_kube.client import KubeClient
from vc_kube.relay import Relay
from vc_kube.store import KubeStore
from vc_proto import codec, subjects
from vc_proto.core import CORE_V1, ConfigMap, Secret
from vc_proto.meta import ObjectMeta
from vc_proto.vocabulary import MANAGED_BY_LABEL, MANAGED_BY_TEPHRA

pytestmark = [pytest.mark.kube, pytest.mark.nats]
NS = "relay-selection"
TEPHRA = {MANAGED_BY_LABEL: MANAGED_BY_TEPHRA}


def secret(name: str, labels: dict[str, str] | None = None) -> Secret:
    data = {"password": base64.b64encode(b"hunter2").decode()}
    return Secret(
        api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace=NS, labels=labels), type="Opaque", data=data
    )


@pytest.fixture
async def bus(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    """A closed nats-server: (the relay's own connection, the test harness's)."""
    server = session_bus().server(tmp_path / "nats")
    server.start()
    try:
        async with (
            connect(server.url, name="relay", credentials=session_bus().credentials("kube-relay")) as relay_nc,
            connect(server.url, name="harness") as harness,
        ):
            yield relay_nc, harness
    finally:
        server.stop()


@contextlib.asynccontextmanager
async def running(relay: Relay) -> AsyncIterator[None]:
    task = asyncio.create_task(relay.run())
    try:
        async with asyncio.timeout(30):
            await relay.wait_synced()
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def mirrored(nc: Client, kind: type[Secret] | type[ConfigMap]) -> set[str]:
    items, _ = await NatsStore(nc).list(kind, NS)
    return {i.metadata.name or "" for i in items}


async def test_a_secret_not_created_by_tephra_never_reaches_nats(kube: KubeClient, bus: tuple[Client, Client]) -> None:
    relay_nc, harness = bus
    store = KubeStore(kube)
    for name in ("cluster-db-password", "job-a-ssh", "late-password", "job-b-ssh"):
        with contextlib.suppress(NotFound):
            await store.delete(Secret, NS, name)
    await store.create(secret("cluster-db-password"))
    await store.create(secret("job-a-ssh", TEPHRA))
    await store.create(
        ConfigMap(api_version=CORE_V1, metadata=ObjectMeta(name="cluster-settings", namespace=NS), data={"k": "v"})
    )
    # What an older relay, which mirrored every Secret, left in the bucket.
    await NatsStore(harness).ensure(["Secret", "ConfigMap"])
    kv = await harness.jetstream().key_value(subjects.bucket("Secret"))
    await kv.put(subjects.object_key(NS, "cluster-db-password"), codec.encode(secret("cluster-db-password")))

    async with running(Relay(kube, relay_nc, kinds=["Secret", "ConfigMap"])):
        assert await mirrored(harness, Secret) == {"job-a-ssh"}
        assert "cluster-settings" not in await mirrored(harness, ConfigMap)
        # From the watch: a cluster Secret, then one of Tephra's; once the second is mirrored, the first
        # (earlier in the apiserver's order) would have been too, had the relay taken it.
        await store.create(secret("late-password"))
        await store.create(secret("job-b-ssh", TEPHRA))

        async def mirrored_b() -> bool:
            return "job-b-ssh" in await mirrored(harness, Secret)

        await eventually(mirrored_b, timeout=20)
        assert await mirrored(harness, Secret) == {"job-a-ssh", "job-b-ssh"}
    keys = {k async for k in _keys(harness)}
    assert subjects.object_key(NS, "cluster-db-password") not in keys
    assert subjects.object_key(NS, "late-password") not in keys


async def _keys(nc: Client) -> AsyncIterator[str]:
    kv = await nc.jetstream().key_value(subjects.bucket("Secret"))
    with contextlib.suppress(Exception):  # nats-py raises NoKeysError on an empty bucket
        for key in await kv.keys():
            yield key

"""Fixtures for tests against the real kube-apiserver (`make kube-up`); skipped cleanly without one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from vc_kube.client import KubeClient
from vc_kube.store import KubeStore

from tests.kube.support import connect, unavailable_reason, wipe


@pytest.fixture
async def kube() -> AsyncIterator[KubeClient]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    client = await connect()
    await wipe(client)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def kube_store(kube: KubeClient) -> KubeStore:
    return KubeStore(kube)

"""Fixtures for tests against the real kube-apiserver (`make kube-up`); skipped cleanly without one."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.kube.support import exclusive_kube, unavailable_reason
from vc_kube.client import KubeClient
from vc_kube.store import KubeStore


@pytest.fixture
async def kube() -> AsyncIterator[KubeClient]:
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    async with exclusive_kube() as client:
        yield client


@pytest.fixture
async def kube_store(kube: KubeClient) -> KubeStore:
    return KubeStore(kube)

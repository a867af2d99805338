"""The kube adapter and relay against K3s in a container (testcontainers), for machines with Docker.

Skipped cleanly where no Docker engine answers (these build machines and CI have none: there the
kube tests use `make kube-up`'s apiserver built from Debian's source instead).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from vc_core.errors import Conflict
from vc_core.store import WatchOp
from vc_kube.client import KubeClient
from vc_kube.crds import ensure_crds
from vc_kube.store import KubeStore
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec

pytestmark = [pytest.mark.kube, pytest.mark.slow]


def docker_unavailable() -> str | None:
    try:
        import docker  # testcontainers' dependency

        docker.from_env(timeout=3).ping()
    except Exception as exc:  # no package, no socket, daemon down: all mean "no Docker engine here"
        return f"no Docker engine for the K3s container ({type(exc).__name__}: {exc})"
    return None


@pytest.fixture(scope="module")
def k3s_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    reason = docker_unavailable()
    if reason:
        pytest.skip(reason)
    k3s = pytest.importorskip("testcontainers.community.k3s", reason="testcontainers[k3s] extra not installed")
    with k3s.K3SContainer() as container:
        path = tmp_path_factory.mktemp("k3s") / "kubeconfig"
        path.write_text(container.config_yaml())
        yield path


@pytest.mark.timeout(300)
async def test_store_and_watch_on_k3s(k3s_kubeconfig: Path) -> None:
    async with await KubeClient.connect(str(k3s_kubeconfig)) as kube:
        await ensure_crds(kube)
        store = KubeStore(kube)
        created = await store.create(
            Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="k3s-q"), spec=QueueSpec(weight=1))
        )
        await store.update(msgspec.structs.replace(created, spec=QueueSpec(weight=2)))
        with pytest.raises(Conflict):
            await store.update(msgspec.structs.replace(created, spec=QueueSpec(weight=3)))
        events = store.watch(Queue)
        async with asyncio.timeout(30):
            seen = [e async for e in _until_synced(events)]
        await events.aclose()
        assert any(e.op is WatchOp.PUT and e.name == "k3s-q" for e in seen)


async def _until_synced(events):  # type: ignore[no-untyped-def]
    async for event in events:
        yield event
        if event.op is WatchOp.SYNCED:
            return

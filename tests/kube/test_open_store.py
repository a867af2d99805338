"""`open_store` with `--backend kube`: the mirrored store on good credentials, ConfigError (exit 2) on bad."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client

from tests.kube.support import KUBECONFIG
from vc_core.errors import ConfigError
from vc_kube.client import KubeClient
from vc_kube.mirrored import MirroredStore
from vc_runtime.service import open_store
from vc_runtime.settings import RuntimeSettings


async def test_a_missing_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    settings = RuntimeSettings(service="t", backend="kube", kubeconfig=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="cannot load kube credentials"):
        await open_store(settings, None)  # type: ignore[arg-type]


@pytest.mark.kube
@pytest.mark.nats
async def test_kube_backend_opens_the_mirrored_store(kube: KubeClient, nc: Client) -> None:
    store = await open_store(RuntimeSettings(service="t", backend="kube", kubeconfig=str(KUBECONFIG)), nc)
    assert isinstance(store, MirroredStore)
    await store.aclose()  # what a service's shutdown calls: no apiserver connection is left open
    assert store.kube.kube._http.closed

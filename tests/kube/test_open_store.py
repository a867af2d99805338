"""`open_store` with `--backend kube`: the mirrored store on good credentials, ConfigError (exit 2) on bad."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client

from tests.kube.support import KUBECONFIG
from vc_core.errors import ConfigError
from vc_kube.client import KubeClient
from vc_kube.mirrored import MirroredStore
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta
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


@pytest.mark.kube
@pytest.mark.nats
async def test_a_service_writes_to_the_apiserver_under_its_own_name(kube: KubeClient, nc: Client) -> None:
    """managedFields (and the audit log) name the Tephra service that wrote, not "Python"."""
    settings = RuntimeSettings(service="scheduler", backend="kube", kubeconfig=str(KUBECONFIG))
    store = await open_store(settings, nc)
    try:
        meta = ObjectMeta(name="written-by", namespace="default")
        await store.create(
            Pod(api_version=CORE_V1, metadata=meta, spec=PodSpec(containers=[Container(name="c", image="busybox")]))
        )
    finally:
        await store.aclose()  # type: ignore[attr-defined]
    stored = await kube.request("GET", "/api/v1/namespaces/default/pods/written-by")
    assert isinstance(stored, dict)
    managers = {entry["manager"] for entry in stored["metadata"]["managedFields"]}
    assert managers == {"vc-scheduler"}

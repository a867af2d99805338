"""HyperNodes on the real kube-apiserver: the CRD takes Volcano's documented HyperNodes unchanged
(exact, regex and label members, a tier-2 of hypernodes), cluster-scoped, and they read back as sent."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.kube.install import kubectl
from tests.unit.validation.test_hypernodes import EXAMPLES
from vc_core.errors import NotFound
from vc_kube.client import KubeClient
from vc_kube.store import KubeStore
from vc_proto import codec
from vc_proto.topology import HyperNode

pytestmark = [pytest.mark.kube]


async def test_the_crd_takes_volcanos_hypernodes_unchanged(kube: KubeClient, tmp_path: Path) -> None:
    manifest = tmp_path / "hypernodes.yaml"
    manifest.write_text(EXAMPLES)
    store = KubeStore(kube)
    sent = [codec.from_dict(d) for d in yaml.safe_load_all(EXAMPLES) if d]
    try:
        kubectl("apply", "-f", str(manifest))
        for obj in sent:
            assert isinstance(obj, HyperNode)
            stored = await store.get(HyperNode, None, obj.metadata.name or "")
            assert stored.spec == obj.spec
            assert stored.metadata.namespace is None  # cluster-scoped, as Volcano's
    finally:
        kubectl("delete", "--ignore-not-found", "-f", str(manifest))
    for obj in sent:
        with pytest.raises(NotFound):
            await store.get(HyperNode, None, obj.metadata.name or "")

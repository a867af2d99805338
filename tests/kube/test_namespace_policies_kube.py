"""ResourceQuotas and PodDisruptionBudgets on the real kube-apiserver: the store writes and reads them at
the version the apiserver serves (PodDisruptionBudgets are policy/v1beta1 on the 1.20 one `make kube-up`
builds), and the relay mirrors them into NATS, where the scheduler reads them."""

from __future__ import annotations

import msgspec
import pytest
from nats.aio.client import Client

from tests.kube.test_relay import nats, running  # noqa: F401 (a fixture)
from tests.support.waiting import eventually
from vc_core.errors import NotFound
from vc_kube.client import KubeClient
from vc_kube.mirrored import MirroredStore
from vc_kube.relay import Relay
from vc_kube.store import KubeStore
from vc_proto import codec
from vc_proto.core import ResourceQuota
from vc_proto.kinds import KINDS
from vc_proto.policy import PodDisruptionBudget

pytestmark = [pytest.mark.kube]

QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "compute", "namespace": "team-a"},
    "spec": {"hard": {"pods": "2", "requests.cpu": "2"}},
}


def budget(version: str) -> PodDisruptionBudget:
    doc = {
        "apiVersion": version,
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "team-a"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    }
    obj = codec.from_dict(doc)
    assert isinstance(obj, PodDisruptionBudget)
    return obj


async def test_a_budget_of_either_version_is_written_where_the_apiserver_serves_it(kube: KubeClient) -> None:
    store = KubeStore(kube)
    served = (await kube.served(KINDS["PodDisruptionBudget"])).api_version
    for version in ("policy/v1", "policy/v1beta1"):
        created = await store.create(budget(version))
        assert created.api_version == served
        stored = await store.get(PodDisruptionBudget, "team-a", "web")
        assert stored.spec == budget(version).spec
        # An update as sent (at policy/v1, say), with the stored version's metadata: the patch goes to the
        # served version's path and changes the spec, not the apiVersion.
        wanted = msgspec.structs.replace(budget("policy/v1"), metadata=stored.metadata)
        assert wanted.spec is not None
        wanted = msgspec.structs.replace(wanted, spec=msgspec.structs.replace(wanted.spec, min_available=3))
        patched = await store.update(wanted)
        assert patched.api_version == served and patched.spec and patched.spec.min_available == 3
        await store.delete(PodDisruptionBudget, "team-a", "web")
        with pytest.raises(NotFound):
            await store.get(PodDisruptionBudget, "team-a", "web")


async def test_the_relay_mirrors_quotas_and_budgets(kube: KubeClient, nats: Client) -> None:  # noqa: F811
    store = KubeStore(kube)
    quota = codec.from_dict(QUOTA)
    assert isinstance(quota, ResourceQuota)
    await store.create(quota)
    mirror = MirroredStore(store, nats)
    async with running(Relay(kube, nats, kinds=["ResourceQuota", "PodDisruptionBudget"])):
        await store.create(budget("policy/v1"))

        async def budget_mirrored() -> bool:
            return bool((await mirror.list(PodDisruptionBudget))[0])

        await eventually(budget_mirrored, what="the budget in NATS")
        (quotas, _), (budgets, _) = await mirror.list(ResourceQuota), await mirror.list(PodDisruptionBudget)
        assert [q.spec.hard for q in quotas if q.spec] == [{"pods": "2", "requests.cpu": "2"}]
        assert [b.spec.min_available for b in budgets if b.spec] == ["50%"]
        await store.delete(ResourceQuota, "team-a", "compute")

        async def quota_gone() -> bool:
            return not (await mirror.list(ResourceQuota))[0]

        await eventually(quota_gone, what="the quota's delete in NATS")

"""PersistentVolumeClaims and PersistentVolumes on the real kube-apiserver: the claim the job controller
plans for a vcjob's volumes[].volumeClaim is accepted by the apiserver's validation as it is written, and
the relay mirrors claims and volumes (with the node affinity the scheduler's volume predicate reads) into
NATS."""

from __future__ import annotations

import pytest
from nats.aio.client import Client

from tests.kube.test_relay import nats, running  # noqa: F401 (a fixture)
from tests.support.waiting import eventually
from vc_job_controller.logic.volumes import claims_to_create
from vc_kube.client import KubeClient
from vc_kube.mirrored import MirroredStore
from vc_kube.relay import Relay
from vc_kube.store import KubeStore
from vc_proto import codec
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, VolumeSpec
from vc_proto.core import PersistentVolume, PersistentVolumeClaim
from vc_proto.meta import ObjectMeta

pytestmark = [pytest.mark.kube]

TERM = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-2"]}]}
VOLUME = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "disk-node-2"},
    "spec": {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "local": {"path": "/mnt/disk"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [TERM]}},
    },
}
CLAIM_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def vcjob() -> Job:
    volumes = [VolumeSpec(mount_path="/data", volume_claim=CLAIM_SPEC)]
    meta = ObjectMeta(name="train", namespace="team-a", uid="6f0c4a56-0000-4000-8000-000000000001")
    return Job(api_version=BATCH_V1ALPHA1, metadata=meta, spec=JobSpec(volumes=volumes))


async def test_the_controllers_claim_is_a_valid_claim_for_the_apiserver(kube: KubeClient) -> None:
    store = KubeStore(kube)
    (write,), recorded = claims_to_create(vcjob(), {})
    claim = write.obj
    assert isinstance(claim, PersistentVolumeClaim)
    created = await store.create(claim)
    stored = await store.get(PersistentVolumeClaim, "team-a", claim.metadata.name or "")
    assert stored.metadata.uid == created.metadata.uid
    assert stored.spec is not None and stored.spec.access_modes == ["ReadWriteOnce"]
    assert stored.spec.resources == {"requests": {"storage": "1Gi"}}
    (owner,) = stored.metadata.owner_references or []
    assert (owner.kind, owner.name, owner.controller) == ("Job", "train", True)
    assert recorded == {f"volume-pvc-{claim.metadata.name}": claim.metadata.name}


async def test_the_relay_mirrors_claims_and_volumes(kube: KubeClient, nats: Client) -> None:  # noqa: F811
    store = KubeStore(kube)
    volume = codec.from_dict(VOLUME)
    claim = codec.from_dict(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "team-a"},
            "spec": {**CLAIM_SPEC, "volumeName": "disk-node-2", "storageClassName": ""},
        }
    )
    assert isinstance(volume, PersistentVolume) and isinstance(claim, PersistentVolumeClaim)
    await store.create(volume)
    mirror = MirroredStore(store, nats)
    async with running(Relay(kube, nats, kinds=["PersistentVolumeClaim", "PersistentVolume"])):
        await store.create(claim)

        async def claim_mirrored() -> bool:
            return bool((await mirror.list(PersistentVolumeClaim))[0])

        await eventually(claim_mirrored, what="the claim in NATS")
        (claims, _), (volumes, _) = await mirror.list(PersistentVolumeClaim), await mirror.list(PersistentVolume)
        assert [(c.metadata.name, c.spec.volume_name) for c in claims if c.spec] == [("data", "disk-node-2")]
        (mirrored,) = volumes
        assert mirrored.spec is not None and mirrored.spec.node_affinity is not None
        assert mirrored.spec.node_affinity.required == {"nodeSelectorTerms": [TERM]}

"""A vcjob's volumes[].volumeClaim in the running system (real nats-server; the job controller,
scheduler, node-sim and gc in process):

- the job controller creates the claim (its deterministic name, controlled by the job) and every pod
  mounts it;
- the scheduler's volume predicate keeps the pods waiting with kube-scheduler's message while the
  claim is unbound (Tephra binds nothing), and places them on the node the bound volume's node
  affinity selects once an admin stores that volume and the claim names it;
- deleting the job removes the claim with the pods (gc: the job owned it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.support.inprocess import run_app
from tests.support.waiting import eventually
from vc_admission.context import CacheContext
from vc_admission.review import Admitter
from vc_admission.write_api import WriteApi
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import NotFound
from vc_gc.app import GcApp
from vc_job_controller.app import JobControllerApp
from vc_job_controller.logic.names import claim_name, podgroup_name
from vc_node_sim.app import NodeSimApp
from vc_proto import api
from vc_proto.batch import Job
from vc_proto.core import PersistentVolumeClaim, Pod
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue, QueueSpec, QueueStatus
from vc_scheduler.app import SchedulerApp

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.timeout(120)]

SIM: dict[str, Any] = {"node_cpu": "4", "node_gpu": "0", "start_delay": 0.05}
UNBOUND = "pod has unbound immediate PersistentVolumeClaims"
_reply = msgspec.json.Decoder(api.WriteReply)


async def admit(store: NatsStore, request: dict[str, Any]) -> None:
    """One request to admission's write API (the class `vc-admission` serves), as the admin."""
    reply = _reply.decode(await WriteApi(store, Admitter(CacheContext(store))).handle(msgspec.json.encode(request)))
    assert reply.error is None, reply.error


JOB: dict[str, Any] = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {
        "schedulerName": "volcano",
        "queue": "default",
        "minAvailable": 2,
        "volumes": [
            {
                "mountPath": "/data",
                "volumeClaim": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }
        ],
        "tasks": [
            {
                "name": "worker",
                "replicas": 2,
                "template": {
                    "metadata": {"annotations": {"sim.tephra.dev/duration": "1h"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
                    },
                },
            }
        ],
    },
}


def volume_on(node: str) -> dict[str, Any]:
    """A local volume only `node` reaches (what a local-path or a zonal disk provisioner would store)."""
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"disk-{node}"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


async def job_pods(store: NatsStore) -> list[Pod]:
    pods, _ = await store.list(Pod, "default")
    return [p for p in pods if (p.metadata.name or "").startswith("train-worker-")]


async def claims(store: NatsStore) -> list[PersistentVolumeClaim]:
    found, _ = await store.list(PersistentVolumeClaim, "default")
    return found


async def test_a_jobs_volume_claim_is_created_mounted_scheduled_by_its_volume_and_collected_with_the_job(
    nats_server: NatsServer, nats_store: NatsStore, tmp_path: Path
) -> None:
    url = nats_server.url
    queue = Queue(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name="default"),
        spec=QueueSpec(weight=1),
        status=QueueStatus(state="Open"),
    )
    await nats_store.create(queue)
    async with (
        run_app(NodeSimApp, "node-sim", url, "node-sim", nodes=3, **SIM),
        run_app(SchedulerApp, "scheduler", url, "scheduler", schedule_period=0.2),
        run_app(JobControllerApp, "job-controller", url, "job-controller"),
        run_app(GcApp, "gc", url, "gc"),
    ):
        await admit(nats_store, {"operation": "create", "object": JOB})
        job = await nats_store.get(Job, "default", "train")
        uid = job.metadata.uid or ""
        name = claim_name("train", uid, 0)

        async def claimed() -> bool:
            return [c.metadata.name for c in await claims(nats_store)] == [name]

        await eventually(claimed, what="the job's claim")
        (claim,) = await claims(nats_store)
        (owner,) = claim.metadata.owner_references or []
        assert (owner.kind, owner.name, owner.uid, owner.controller) == ("Job", "train", uid, True)

        async def mounted() -> bool:
            pods = await job_pods(nats_store)
            return len(pods) == 2 and all(
                any((v.persistent_volume_claim or {}).get("claimName") == name for v in p.spec.volumes or [])
                for p in pods
                if p.spec
            )

        await eventually(mounted, what="both pods mounting the claim")

        async def waits_unbound() -> bool:
            group = await nats_store.get(PodGroup, "default", podgroup_name("train", uid))
            conditions = group.status.conditions if group.status else None
            return any(UNBOUND in (c.message or "") for c in conditions or [])

        await eventually(waits_unbound, what="the unbound claim's message on the PodGroup")
        assert all(not (p.spec and p.spec.node_name) for p in await job_pods(nats_store))

        # An admin stores a volume node-2 alone reaches and binds the claim to it (Tephra binds nothing).
        await admit(nats_store, {"operation": "create", "object": volume_on("node-2")})
        bound = msgspec.structs.replace(claim, spec=msgspec.structs.replace(claim.spec, volume_name="disk-node-2"))
        await nats_store.update(bound)

        async def on_node_2() -> bool:
            pods = await job_pods(nats_store)
            return len(pods) == 2 and all(p.spec and p.spec.node_name == "node-2" for p in pods)

        await eventually(on_node_2, what="the pods placed where their volume is")

        await admit(nats_store, {"operation": "delete", "kind": "Job", "namespace": "default", "name": "train"})

        async def collected() -> bool:
            try:
                await nats_store.get(Job, "default", "train")
            except NotFound:
                return not await claims(nats_store)
            return False

        await eventually(collected, timeout=60, what="the claim gone with the job")

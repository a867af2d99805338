"""GPU sharing in the whole embedded system (admission, controllers, scheduler and node-sim, each its own
process on a real nats-server): node-sim registers two shareable 16 GiB GPUs per node as Volcano's vGPU
device plugin does, the scheduler runs Volcano's default conf plus deviceshare as Volcano's vGPU guide
configures it, and

- the device plugin's example pods (tests/fixtures/volcano/vgpu-case0*.yml), applied unchanged with
  vcctl, run with their GPU assignment annotated as Volcano annotates it (`volcano.sh/vgpu-ids-new`
  naming GPUs of the pod's own node, one entry per vGPU of each asking container, `volcano.sh/vgpu-node`,
  `volcano.sh/bind-phase: allocating`);
- a vcjob of two workers each asking 12000 MiB of one GPU runs on two different GPUs;
- a pod asking 20000 MiB of one GPU waits, its PodGroup saying no GPU can hold that much.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.services import eventually
from tests.support.system import System, start_system
from vc_core.errors import NotFound
from vc_node_sim.vgpu import gpu_uuid
from vc_proto.core import Pod
from vc_proto.scheduling import PodGroup
from vc_sched_core.framework.conf import DEFAULT_CONF_YAML
from vc_sched_core.snapshot.vgpu import decode_assignment

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "volcano"
# Volcano's default conf with deviceshare as the vGPU guide enables it (its tier and arguments).
CONF = DEFAULT_CONF_YAML + (
    "  - name: deviceshare\n"
    "    arguments:\n"
    "      deviceshare.VGPUEnable: true   # enable vgpu plugin\n"
    "      deviceshare.SchedulePolicy: binpack  # scheduling policy. binpack / spread\n"
)
GPU_MEMORY = 16384
GPUS_PER_NODE = 2


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(CONF)
    extra = {
        "scheduler": ["--scheduler-conf", str(conf)],
        "node-sim": ["--vgpus-per-node", str(GPUS_PER_NODE), "--vgpu-memory", str(GPU_MEMORY)],
    }
    running = await start_system(tmp_path, extra=extra)
    try:
        yield running
    finally:
        running.stop()


async def pod_of(system: System, name: str) -> Pod:
    return await system.store_call(lambda s: s.get(Pod, "default", name))


async def running_pod(system: System, name: str) -> Pod:
    async def running() -> bool:
        try:
            pod = await pod_of(system, name)
        except NotFound:  # a vcjob's pods come once its PodGroup is admitted
            return False
        return bool(pod.status and pod.status.phase == "Running")

    try:
        await eventually(running, timeout=60, interval=0.3)
    except AssertionError as exc:
        raise AssertionError(f"pod {name} is not Running\n{system.logs()}") from exc
    return await pod_of(system, name)


def gpus_held(pod: Pod) -> list[list[tuple[str, int, int]]]:
    """Per asking container, (GPU uuid, MiB, cores) of each GPU the bind annotated; checks the rest of
    Volcano's assignment annotations on the way."""
    annotations = pod.metadata.annotations or {}
    node = pod.spec.node_name if pod.spec else None
    assert annotations.get("volcano.sh/vgpu-node") == node
    assert annotations.get("volcano.sh/bind-phase") == "allocating"
    assert annotations["volcano.sh/devices-to-allocate"] == annotations["volcano.sh/vgpu-ids-new"]
    assert annotations["volcano.sh/vgpu-time"].isdigit() and annotations["volcano.sh/bind-time"].isdigit()
    containers = decode_assignment(annotations["volcano.sh/vgpu-ids-new"])
    own = {gpu_uuid(node or "", i) for i in range(GPUS_PER_NODE)}
    assert all(use.uuid in own for uses in containers for use in uses), (node, containers)
    return [[(use.uuid, use.memory, use.cores) for use in uses] for uses in containers]


def vgpu_job(name: str, replicas: int, memory: int) -> dict[str, Any]:
    limits = {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": memory}
    container = {"name": "cuda", "image": "nvidia/cuda:12.0-base", "resources": {"limits": limits}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": replicas,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [{"name": "worker", "replicas": replicas, "template": {"spec": {"containers": [container]}}}],
        },
    }


async def test_the_vgpu_examples_run_with_their_gpus_annotated(system: System) -> None:
    for example in ("vgpu-case01.yml", "vgpu-case02.yml", "vgpu-case03.yml"):
        applied = system.vcctl("apply", "-f", str(FIXTURES / example))
        assert applied.returncode == 0, applied.stderr
    # vgpu-case01: one vGPU of 1024 MiB; vgpu-case02: one of 10240 MiB.
    assert [[(mib, cores) for _, mib, cores in c] for c in gpus_held(await running_pod(system, "test1"))] == [
        [(1024, 0)]
    ]
    assert [[(mib, cores) for _, mib, cores in c] for c in gpus_held(await running_pod(system, "pod1"))] == [
        [(10240, 0)]
    ]
    # vgpu-case03: two of its three containers ask 2 vGPUs each (2000 and 3000 MiB), each on both GPUs.
    held = gpus_held(await running_pod(system, "gpu-pod12"))
    assert [sorted((mib for _, mib, _ in c)) for c in held] == [[2000, 2000], [3000, 3000]]
    assert all(len({uuid for uuid, _, _ in c}) == 2 for c in held)  # a container's vGPUs: different GPUs

    await system.apply(vgpu_job("vgpu-train", 2, 12000))
    workers = [await running_pod(system, f"vgpu-train-worker-{i}") for i in range(2)]
    uuids = [gpus_held(w)[0][0][0] for w in workers]
    assert len(set(uuids)) == 2, uuids  # 12000 + 12000 MiB do not fit one 16384 MiB GPU

    too_big = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"limits": {"volcano.sh/vgpu-memory": 20000}}}
            ],
        },
    }
    await system.apply(too_big)

    async def told() -> bool:
        pod = await pod_of(system, "too-big")
        group = (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name")
        if not group:
            return False
        podgroup = await system.store_call(lambda s: s.get(PodGroup, "default", group))
        messages = [c.message or "" for c in (podgroup.status.conditions or [])] if podgroup.status else []
        return any("no GPU of the node(s) could hold 20000 MiB of device memory" in m for m in messages)

    try:
        await eventually(told, timeout=60, interval=0.5)
    except AssertionError as exc:
        raise AssertionError(f"no why-message for too-big\n{system.logs()}") from exc
    pod = await pod_of(system, "too-big")
    assert not (pod.spec and pod.spec.node_name)

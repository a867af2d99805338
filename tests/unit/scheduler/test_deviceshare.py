"""deviceshare (vGPU): the device-plugin formats, the per-GPU rule against a plain transcription of
Volcano's checkNodeGPUSharingPredicateAndScore, the session's GPU books, the bind annotations, the queue
status, and the conf checks."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from tests.unit.scheduler.scheduler_builders import real_session, snapshot
from vc_sched_core.cycle import apply_result, load_scheduler_conf, run_cycle
from vc_sched_core.framework.conf import ConfError, argument_bool
from vc_sched_core.framework.interfaces import ExtensionPoint
from vc_sched_core.framework.model import TaskStatus
from vc_sched_core.framework.statement import Statement
from vc_sched_core.plugins.deviceshare import DeviceSharePlugin
from vc_sched_core.plugins.vgpu_devices import BINPACK, SPREAD, DeviceTable, Holding
from vc_sched_core.snapshot import kube
from vc_sched_core.snapshot.vgpu import (
    VGPUContainerRequest,
    VGPUDevice,
    VGPUPodRequest,
    decode_assignment,
    encode_assignment,
    encode_node_devices,
    node_inventory,
    pod_request,
)

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: deviceshare
    arguments: {deviceshare.VGPUEnable: true, deviceshare.SchedulePolicy: %s, deviceshare.ScheduleWeight: 10}
"""


def gpu_node(
    name: str, gpus: int = 2, memory: int = 16000, share: int = 10, sizes: list[tuple[int, int]] | None = None
) -> dict[str, Any]:
    """A node with `gpus` GPUs of `share` shares and `memory` MiB each (or of (share, memory) `sizes`)."""
    sizes = sizes or [(share, memory)] * gpus
    devices = [VGPUDevice(f"GPU-{name}-{i}", n, mib, "NVIDIA-A10", True) for i, (n, mib) in enumerate(sizes)]
    return {
        "kind": "Node",
        "metadata": {"name": name, "annotations": {"volcano.sh/node-vgpu-register": encode_node_devices(devices)}},
        "status": {
            "allocatable": {
                "cpu": "16",
                "memory": "64Gi",
                "volcano.sh/vgpu-number": str(gpus * share),
                "volcano.sh/vgpu-memory": str(gpus * memory),
                "volcano.sh/vgpu-cores": str(gpus * 100),
            }
        },
    }


def vgpu_pod(
    name: str, group: str, *, number: int = 1, memory: int = 0, cores: int = 0, node: str = "", **annotations: str
) -> dict[str, Any]:
    limits: dict[str, int] = {"volcano.sh/vgpu-number": number}
    if memory:
        limits["volcano.sh/vgpu-memory"] = memory
    if cores:
        limits["volcano.sh/vgpu-cores"] = cores
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"limits": limits}}]}
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"scheduling.k8s.io/group-name": group, **annotations},
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def group(name: str, members: int = 1, phase: str = "Inqueue") -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": members},
        "status": {"phase": phase},
    }


# -- formats --------------------------------------------------------------------------------------------


def test_the_register_annotation_needs_all_three_allocatable_resources_and_whole_entries() -> None:
    text = "GPU-0,10,16000,NVIDIA-A10,true,hami-core:GPU-1,4,8000,NVIDIA-T4,false,mig:"
    full = {"volcano.sh/vgpu-number": 14, "volcano.sh/vgpu-cores": 200, "volcano.sh/vgpu-memory": 24000}
    inventory = node_inventory({"volcano.sh/node-vgpu-register": text}, full)
    assert inventory is not None and inventory.mode == "hami-core"  # mig falls back: no geometry config
    assert inventory.devices == (
        VGPUDevice("GPU-0", 10, 16000, "NVIDIA-A10", True),
        VGPUDevice("GPU-1", 4, 8000, "NVIDIA-T4", False),
    )
    assert encode_node_devices(inventory.devices) == text.replace("mig", "hami-core")
    assert node_inventory({"volcano.sh/node-vgpu-register": text}, {**full, "volcano.sh/vgpu-cores": 0}) is None
    assert node_inventory({"volcano.sh/node-vgpu-register": "GPU-0,10,16000:"}, full) is None  # short entry
    assert node_inventory({}, full) is None


def test_a_pods_request_follows_its_containers_limits() -> None:
    """The device plugin's vgpu-case03 example: two of three containers ask, 2 vGPUs each."""
    first = {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 2000}
    third = kube.ResourceRequirements(
        limits={"volcano.sh/vgpu-memory": "3000"}, requests={"volcano.sh/vgpu-cores": "30"}
    )
    spec = kube.PodSpec(
        containers=[
            kube.Container(resources=kube.ResourceRequirements(limits=first)),
            kube.Container(),
            kube.Container(resources=third),
        ]
    )
    request = pod_request(
        spec.containers, {"volcano.sh/vgpu-podgroup-policy": "spread", "scheduling.k8s.io/group-name": "g"}, "ns"
    )
    assert request is not None
    assert request.containers == (VGPUContainerRequest(2, 2000, 101, 0), VGPUContainerRequest(1, 3000, 101, 30))
    assert request.spread_group == "ns/g"
    only_requests = kube.Container(resources=kube.ResourceRequirements(requests={"volcano.sh/vgpu-number": 1}))
    assert pod_request([only_requests], {}, "ns") is None  # Volcano looks at limits only
    whole = pod_request(
        [kube.Container(resources=kube.ResourceRequirements(limits={"volcano.sh/vgpu-number": 1}))], {}, "ns"
    )
    assert whole is not None and whole.containers[0].memory_on(16000) == 16000  # no memory: the whole GPU


def test_the_assignment_annotation_round_trips_and_skips_malformed_entries() -> None:
    text = "GPU-0,NVIDIA,2000,0:GPU-1,NVIDIA,2000,0:;GPU-1,NVIDIA,3000,30:"
    decoded = decode_assignment(text)
    assert [[(u.uuid, u.memory, u.cores) for u in c] for c in decoded] == [
        [("GPU-0", 2000, 0), ("GPU-1", 2000, 0)],
        [("GPU-1", 3000, 30)],
    ]
    assert encode_assignment(decoded) == text
    assert decode_assignment("GPU-0,NVIDIA,x,0:GPU-1,NVIDIA,5,5:") == (decode_assignment("GPU-1,NVIDIA,5,5:")[0],)


# -- the per-GPU rule, against Volcano's loop -----------------------------------------------------------


@dataclass
class Gpu:
    number: int
    memory: int
    used_num: int = 0
    used_mem: int = 0
    used_core: int = 0


def volcano_fit(gpus: list[Gpu], request: VGPUPodRequest, policy: str) -> tuple[bool, float, list[list[int]]]:
    """checkNodeGPUSharingPredicateAndScore transcribed line by line (hami-core, no filters), scoring
    spread on the GPU as it was before the container (see deviceshare.py)."""
    score, picks = 0.0, []
    for want in request.containers:
        if want.number > len(gpus):
            return False, 0.0, []
        left, taken = want.number, []
        if policy == BINPACK:
            order = sorted(range(len(gpus)), key=lambda i: (-gpus[i].used_mem, i))
        elif policy == SPREAD:
            order = sorted(range(len(gpus)), key=lambda i: (gpus[i].used_num, i))
        else:
            order = list(range(len(gpus) - 1, -1, -1))
        for i in order:
            g = gpus[i]
            if g.number <= g.used_num:
                continue
            need = want.memory_on(g.memory)
            if g.memory - g.used_mem < need or g.used_core + want.cores > 100:
                continue
            if (want.cores == 100 and g.used_num > 0) or (g.used_core == 100 and want.cores == 0):
                continue
            idle = g.used_num == 0
            g.used_num, g.used_mem, g.used_core = g.used_num + 1, g.used_mem + need, g.used_core + want.cores
            if left > 0:
                left -= 1
                taken.append(i)
                score += 100 * g.used_mem / g.memory if policy == BINPACK else (100 if policy == SPREAD and idle else 0)
            if left == 0:
                break
        if left > 0:
            return False, 0.0, []
        picks.append(sorted(taken))
    return True, score, picks


def random_node(rng: random.Random) -> list[Gpu]:
    gpus = []
    for _ in range(rng.randint(1, 4)):
        g = Gpu(number=rng.choice([1, 2, 4]), memory=rng.choice([8000, 16000]))
        g.used_num = rng.randint(0, g.number)
        g.used_mem = min(g.memory, rng.choice([0, 2000, 4000, 8000]) * g.used_num)
        g.used_core = min(100, rng.choice([0, 20, 50, 100]) * (g.used_num > 0))
        gpus.append(g)
    return gpus


def table_of(nodes: list[list[Gpu]]) -> DeviceTable:
    sizes = [[(g.number, g.memory) for g in gpus] for gpus in nodes]
    snap = snapshot(*(gpu_node(f"n{i}", sizes=sizes[i]) for i in range(len(nodes))))
    ssn = real_session(snap, load_scheduler_conf(CONF % BINPACK))
    table = DeviceTable(ssn.nodes)
    for row, gpus in enumerate(nodes):
        for col, g in enumerate(gpus):
            table.used_num[row, col], table.used_mem[row, col], table.used_core[row, col] = (
                g.used_num,
                g.used_mem,
                g.used_core,
            )
    return table


@pytest.mark.parametrize("policy", [BINPACK, SPREAD, ""])
def test_the_vectorised_fit_is_volcanos_loop(policy: str) -> None:
    rng = random.Random(7)
    for _ in range(60):
        nodes = [random_node(rng) for _ in range(6)]
        containers = tuple(
            VGPUContainerRequest(rng.randint(1, 3), memory, 101 if memory else 100, rng.choice([0, 0, 30, 100]))
            for memory in (rng.choice([0, 2000, 6000, 12000]) for _ in range(rng.randint(1, 2)))
        )
        request = VGPUPodRequest(containers)
        table = table_of(nodes)
        fit = table.fit(request, np.arange(len(nodes), dtype=np.intp), policy)
        for row, gpus in enumerate(nodes):
            ok, score, picks = volcano_fit([Gpu(**vars(g)) for g in gpus], request, policy)
            assert fit.ok[row] == ok, (row, gpus, request)
            assigned = table.assign(request, row, policy)  # the one-node path an allocation takes
            assert (assigned is not None) == ok
            if ok:
                assert fit.score[row] == pytest.approx(score)
                assert [sorted(np.flatnonzero(t[row]).tolist()) for t in fit.taken] == picks
                assert assigned is not None and [sorted(col for col, _, _ in c) for c in assigned] == picks


def test_failures_name_the_rule_and_only_busy_gpus_are_resolvable() -> None:
    table = table_of([[Gpu(10, 16000)], [Gpu(10, 16000, used_num=1, used_mem=15000)]])
    rows = np.arange(2, dtype=np.intp)
    plugin = DeviceSharePlugin({"deviceshare.VGPUEnable": True})
    plugin.devices = table

    def failures(number: int, memory: int) -> list[tuple[list[bool], str, bool]]:
        request = VGPUPodRequest((VGPUContainerRequest(number, memory, 101, 0),))
        task = type("T", (), {"pod": type("P", (), {"vgpu": request})()})()
        return [(f.mask.tolist(), f.reason, f.resolvable) for f in plugin.predicate(task, rows)]  # type: ignore[arg-type]

    assert failures(2, 1000) == [
        (
            [True, True],
            "deviceshare: node(s) have fewer than the 2 GPUs a container asks (volcano.sh/vgpu-number)",
            False,
        )
    ]
    assert failures(1, 20000)[0][2] is False and "could hold 20000 MiB" in failures(1, 20000)[0][1]
    assert failures(1, 4000) == [
        ([False, True], "deviceshare: no GPU of the node(s) has a free share with 4000 MiB of device memory left", True)
    ]


def test_filters_mode_and_podgroup_spread() -> None:
    table = table_of([[Gpu(10, 16000), Gpu(10, 16000)]])
    row = np.array([0], dtype=np.intp)
    one = (VGPUContainerRequest(1, 1000, 101, 0),)
    assert not table.fit(VGPUPodRequest(one, mode="mig"), row, "").ok[0]
    assert table.fit(VGPUPodRequest(one, mode="hami-core"), row, "").ok[0]  # the guide's hami-pod
    assert table.assign(VGPUPodRequest(one, mode="mig"), 0, "") is None
    assert not table.fit(VGPUPodRequest(one, use_types=("T4",)), row, "").ok[0]
    assert table.fit(VGPUPodRequest(one, use_types=("a10",)), row, "").ok[0]  # case-insensitive, as Volcano
    only = table.fit(VGPUPodRequest(one, use_uuids=("GPU-n0-0",)), row, "")
    assert np.flatnonzero(only.taken[0][0]).tolist() == [0]
    denied = table.fit(VGPUPodRequest(one, nouse_uuids=("GPU-n0-0", "GPU-n0-1")), row, "")
    assert not denied.ok[0]
    # A pod of PodGroup ns/g with the spread policy avoids GPUs where a pod of ns/g holds a share.
    table.hold("other", Holding(0, ((0, 1000, 0),), "ns/g"))
    spread = table.fit(VGPUPodRequest(one, spread_group="ns/g"), row, BINPACK)
    assert np.flatnonzero(spread.taken[0][0]).tolist() == [1]
    assert np.flatnonzero(table.fit(VGPUPodRequest(one), row, BINPACK).taken[0][0]).tolist() == [0]


# -- in a session ---------------------------------------------------------------------------------------


def test_running_pods_hold_their_annotated_gpus_and_releasing_ones_do_not() -> None:
    leaving = vgpu_pod("old-0", "old", memory=1000, node="n1", **{"volcano.sh/vgpu-ids-new": "GPU-n1-1,NVIDIA,1000,0:"})
    leaving["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    snap = snapshot(
        gpu_node("n1", gpus=2, share=1),
        group("run", 1, "Running"),
        group("old", 1, "Running"),
        vgpu_pod("run-0", "run", memory=1000, node="n1", **{"volcano.sh/vgpu-ids-new": "GPU-n1-0,NVIDIA,1000,0:"}),
        leaving,
    )
    ssn = real_session(snap, load_scheduler_conf(CONF % BINPACK))
    plugin = DeviceSharePlugin({"deviceshare.VGPUEnable": True})
    plugin.on_session_open(ssn)
    assert plugin.devices is not None
    assert plugin.devices.used_num[0].tolist() == [1, 0] and plugin.devices.used_mem[0].tolist() == [1000, 0]
    victim = next(iter(ssn.jobs["default/run"].tasks.values()))
    stmt = Statement(ssn)
    stmt.evict(victim, "preempt")  # evicted: its GPU is free at once (Volcano's Release)
    assert plugin.devices.used_num[0].tolist() == [0, 0]
    stmt.discard()  # put back: its GPU as annotated again
    assert victim.status == TaskStatus.RUNNING and plugin.devices.used_num[0].tolist() == [1, 0]


def test_an_allocation_takes_gpus_and_annotates_its_bind_and_a_discard_gives_them_back() -> None:
    snap = snapshot(gpu_node("n1"), group("new", 1), vgpu_pod("new-0", "new", memory=3000, cores=20))
    ssn = real_session(snap, load_scheduler_conf(CONF % BINPACK))
    plugin = DeviceSharePlugin({"deviceshare.VGPUEnable": True, "deviceshare.SchedulePolicy": "binpack"})
    plugin.on_session_open(ssn)
    assert plugin.devices is not None
    task = next(iter(ssn.jobs["default/new"].tasks.values()))
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.nodes.by_name["n1"])
    assert plugin.devices.used_mem[0].tolist() == [3000, 0]
    assert ssn.bind_annotations[task.uid]["volcano.sh/vgpu-ids-new"] == "GPU-n1-0,NVIDIA,3000,20:"
    assert ssn.bind_annotations[task.uid]["volcano.sh/vgpu-time"] == str(int(ssn.now.timestamp()))  # type: ignore[union-attr]
    stmt.discard()
    assert plugin.devices.used_mem[0].tolist() == [0, 0] and not ssn.bind_annotations[task.uid]


def test_a_second_cycle_counts_the_gpus_the_first_bound() -> None:
    """`--cycles 2`: the first cycle's binds carry their annotations into the next cycle's pods."""
    conf = load_scheduler_conf(CONF % BINPACK)
    snap = snapshot(
        gpu_node("n1", gpus=1, memory=10000),
        group("a", 1),
        group("b", 1),
        vgpu_pod("a-0", "a", memory=6000),
        vgpu_pod("b-0", "b", memory=6000),
    )
    first = run_cycle(snap, conf)
    assert len(first.binds) == 1
    second = run_cycle(apply_result(snap, first), conf)
    assert second.binds == {}  # 6000 of the GPU's 10000 MiB are held by the pod bound first


def test_queue_status_counts_the_device_memory_pods_hold() -> None:
    """Volcano's AddQueueResource: a container of 2 vGPUs asking 3000 MiB each holds 6000 MiB."""
    conf = load_scheduler_conf(CONF % BINPACK)
    result = run_cycle(snapshot(gpu_node("n1"), group("two", 1), vgpu_pod("two-0", "two", number=2, memory=3000)), conf)
    assert result.binds == {"default/two-0": "n1"}
    allocated = {q.queue: q.allocated for q in result.queues}["default"]
    assert allocated["volcano.sh/vgpu-memory"] == "6000"  # the request alone says 3000
    assert allocated["volcano.sh/vgpu-number"] == "2"


def test_pods_without_vgpu_cost_nothing_and_no_gpu_nodes_register_nothing() -> None:
    conf = load_scheduler_conf(CONF % BINPACK)
    plain = snapshot({"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}})
    ssn = real_session(plain, conf)
    assert "deviceshare" not in ssn._fns[ExtensionPoint.PREDICATE]  # no GPU anywhere: nothing to check
    disabled = real_session(snapshot(gpu_node("n1")), load_scheduler_conf((CONF % BINPACK).replace("true", "false")))
    assert "deviceshare" not in disabled._fns[ExtensionPoint.PREDICATE]
    ssn = real_session(snapshot(gpu_node("n1")), conf)
    assert "deviceshare" in ssn._fns[ExtensionPoint.PREDICATE]


# -- conf -----------------------------------------------------------------------------------------------


def test_conf_refuses_what_volcano_stops_on_and_names_what_tephra_ignores() -> None:
    def conf(arguments: str, *, strict: bool = False) -> Any:
        return load_scheduler_conf(
            f'actions: "allocate"\ntiers:\n- plugins:\n  - name: deviceshare\n    arguments: {{{arguments}}}\n',
            strict=strict,
        )

    with pytest.raises(ConfError, match="can not define true in both gpu sharing and gpu number"):
        conf("deviceshare.GPUSharingEnable: true, deviceshare.GPUNumberEnable: true")
    with pytest.raises(ConfError, match="gpu-share and vgpu can't be used together"):
        conf('deviceshare.GPUNumberEnable: "true", deviceshare.VGPUEnable: true')
    loaded = conf(
        "deviceshare.VGPUEnable: true, deviceshare.AscendHAMiVNPUEnable: true, deviceshare.NodeLockEnable: true"
    )
    assert loaded.warnings() == [
        "tiers[0].plugins[0]: deviceshare: argument deviceshare.AscendHAMiVNPUEnable: "
        "not implemented by Tephra; ignored"
    ]
    with pytest.raises(ConfError, match="AscendHAMiVNPUEnable is not implemented"):
        conf("deviceshare.AscendHAMiVNPUEnable: true", strict=True)
    assert conf("deviceshare.GPUNumberEnable: false").warnings() == []
    assert [argument_bool(v) for v in (True, "T", "0", "yes", 1)] == [True, True, False, None, None]

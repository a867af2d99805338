"""deviceshare: pods share GPUs (Volcano's deviceshare plugin with its vGPU device, hami-core mode).

With `deviceshare.VGPUEnable: true`, a pod whose containers limit `volcano.sh/vgpu-number` or
`volcano.sh/vgpu-memory` passes a node only when each container's vGPUs fit on that many different
GPUs of the node (vgpu_devices.py has the rule), as the node's GPUs stand with the pods already on them
(their `volcano.sh/vgpu-ids-new`) and those this session placed. When the pod is allocated, its GPUs are
chosen the same way and its bind carries Volcano's annotations (`volcano.sh/vgpu-ids-new`,
`volcano.sh/devices-to-allocate`, `volcano.sh/vgpu-node`, `volcano.sh/bind-phase: allocating`, and the
times). Nodes without registered GPUs are not checked here (the resource fit refuses them for lack of
`volcano.sh/vgpu-number`). `deviceshare.ScheduleWeight` > 0 adds a node score:
floor(Σ GPU scores + 0.5) x weight, the GPU scores of `deviceshare.SchedulePolicy` (binpack, spread).

At session close each queue's allocated vgpu-memory and vgpu-cores count what the pods' GPUs hold
(Volcano's AddQueueResource), not the requests: a 2-GPU container asking 3000 MiB holds 6000 MiB.
The session also returns the GPUs as it left them for Volcano's volcano_vgpu_device_* metrics: per GPU
its memory, the pods sharing it and the memory and cores they hold; per pod and GPU what it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.conf import argument_bool
from vc_sched_core.framework.interfaces import EventHandler, ExtensionPoint, NodeFailure, PluginArgs
from vc_sched_core.framework.model import ALLOCATED_STATUSES, TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeInfo
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins.vgpu_devices import DeviceTable, Failure, Holding
from vc_sched_core.snapshot.vgpu import (
    ASSIGNED_IDS,
    ASSIGNED_NODE,
    ASSIGNED_TIME,
    BIND_PHASE,
    BIND_TIME,
    DEVICES_TO_ALLOCATE,
    GROUP_NAME_KEYS,
    HAMI_CORE,
    VGPU_CORES,
    VGPU_MEMORY,
    DeviceUse,
    VGPUDeviceFigures,
    VGPUPodFigures,
    VGPUPodRequest,
    encode_assignment,
)

NAME: Final = "deviceshare"
VGPU_ENABLE: Final = "deviceshare.VGPUEnable"
SCHEDULE_POLICY: Final = "deviceshare.SchedulePolicy"
SCHEDULE_WEIGHT: Final = "deviceshare.ScheduleWeight"
ALLOCATING: Final = "allocating"
ANNOTATION_KEYS: Final = (ASSIGNED_NODE, ASSIGNED_TIME, ASSIGNED_IDS, DEVICES_TO_ALLOCATE, BIND_PHASE, BIND_TIME)
Rows = NDArray[np.intp]
DeviceFigures = dict[tuple[str, str], VGPUDeviceFigures]  # by (UUID, node)
PodFigures = dict[tuple[str, str, str], VGPUPodFigures]  # by (UUID, node, pod name)
_NONE_HELD: Final = VGPUPodFigures(0, 0)


class DeviceSharePlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        args = dict(args or {})
        self.vgpu = argument_bool(args.get(VGPU_ENABLE)) is True
        policy = args.get(SCHEDULE_POLICY, "")
        self.policy = policy if isinstance(policy, str) else ""
        weight = args.get(SCHEDULE_WEIGHT, 0)  # Volcano's GetInt: an int, anything else is ignored
        self.weight = weight if isinstance(weight, int) and not isinstance(weight, bool) else 0
        self.devices: DeviceTable | None = None
        self._ssn: Session | None = None
        self._held: dict[str, TaskInfo] = {}  # the tasks holding GPUs, by uid

    def on_session_open(self, ssn: Session) -> None:
        if not self.vgpu or not any(node.obj.vgpu is not None for node in ssn.nodes.nodes):
            return  # no GPU to share: every pod passes, as Volcano's predicate skips nodes without devices
        self._ssn, self.devices = ssn, DeviceTable(ssn.nodes)
        self._hold_placed(self.devices)
        ssn.add_fn(ExtensionPoint.PREDICATE, NAME, self.predicate, node_local=True)
        if self.weight > 0:
            ssn.add_fn(ExtensionPoint.NODE_ORDER, NAME, self.node_order, node_local=True)
        ssn.add_event_handler(EventHandler(allocate=self._allocated, deallocate=self._deallocated))

    def on_session_close(self, ssn: Session) -> None:
        if self.devices is not None:
            self._count_queues(ssn, self.devices)
            ssn.vgpu_devices, ssn.vgpu_pods = self._figures(ssn, self.devices)
        self.devices = self._ssn = None
        self._held = {}

    # -- predicate and score --------------------------------------------------------------------------

    def predicate(self, task: TaskInfo, rows: Rows) -> list[NodeFailure]:
        request = task.pod.vgpu
        if request is None or self.devices is None:
            return []
        fit = self.devices.fit(request, rows, self.policy)
        if fit.ok.all():
            return []
        return [
            NodeFailure(fit.failure == why, reason(why, request, int(fit.container[fit.failure == why][0])), resolvable)
            for why, resolvable in _KINDS
            if (fit.failure == why).any()
        ]

    def node_order(self, task: TaskInfo, rows: Rows) -> NDArray[np.float64]:
        request = task.pod.vgpu
        if request is None or self.devices is None:
            return np.zeros(len(rows), dtype=np.float64)
        fit = self.devices.fit(request, rows, self.policy)
        return np.where(fit.ok, np.floor(fit.score + 0.5) * self.weight, 0.0)

    # -- the GPUs tasks hold ----------------------------------------------------------------------------

    def _hold_placed(self, devices: DeviceTable) -> None:
        """The GPUs of every pod on a node with GPUs (releasing ones free theirs, as in Volcano)."""
        assert self._ssn is not None
        nodes = self._ssn.nodes.nodes
        annotated = [
            (row, task)
            for row in np.flatnonzero(devices.gpu_rows).tolist()
            for task in nodes[row].tasks.values()
            if ASSIGNED_IDS in task.pod.annotations
        ]
        for row, task in annotated:
            self._restore(devices, task, row)

    def _restore(self, devices: DeviceTable, task: TaskInfo, row: int) -> None:
        annotation = task.pod.annotations.get(ASSIGNED_IDS)
        if annotation and task.status != TaskStatus.RELEASING:
            holding = devices.holding_of(row, annotation, _group_of(task))
            if holding is not None:
                devices.hold(task.uid, holding)
                self._held[task.uid] = task

    def _allocated(self, task: TaskInfo) -> None:
        """A task placed on a node in this session (or put back there): take its GPUs."""
        ssn, devices, request = self._ssn, self.devices, task.pod.vgpu
        if ssn is None or devices is None or request is None:
            return
        node = ssn.nodes.by_name.get(task.node_name)
        if node is None or node.obj.vgpu is None:
            return
        if task.pod.node_name:  # placed before this session (an eviction undone): its GPUs as annotated
            self._restore(devices, task, node.row)
            return
        uses = devices.assign(request, node.row, self.policy)
        if uses is None:
            return  # the predicate passed this node just now; nothing fits only if state is inconsistent
        devices.hold(task.uid, Holding(node.row, tuple(u for c in uses for u in c), _group_of(task)))
        self._held[task.uid] = task
        uuids = devices.uuids[node.row]
        assignment = encode_assignment([[DeviceUse(uuids[col], mem, cores) for col, mem, cores in c] for c in uses])
        ssn.bind_annotations.setdefault(task.uid, {}).update(self._annotations(node.name, assignment))

    def _deallocated(self, task: TaskInfo) -> None:
        """Evicted, or its placement undone: its GPUs are free again, and its bind annotations gone."""
        if self.devices is None or self._ssn is None or task.pod.vgpu is None:
            return
        self.devices.release(task.uid)
        self._held.pop(task.uid, None)
        annotations = self._ssn.bind_annotations.get(task.uid)
        if annotations is not None:
            for key in ANNOTATION_KEYS:
                annotations.pop(key, None)

    def _annotations(self, node: str, assignment: str) -> dict[str, str]:
        assert self._ssn is not None
        out = {
            ASSIGNED_NODE: node,
            ASSIGNED_IDS: assignment,
            DEVICES_TO_ALLOCATE: assignment,
            BIND_PHASE: ALLOCATING,
        }
        if self._ssn.now is not None:  # Unix seconds, as Volcano writes them (the session's clock)
            out[ASSIGNED_TIME] = out[BIND_TIME] = str(int(self._ssn.now.timestamp()))
        return out

    def _count_queues(self, ssn: Session, devices: DeviceTable) -> None:
        """Queue allocations with vgpu-memory and vgpu-cores as the tasks' GPUs hold them."""
        memory, cores = ssn.space.index.get(VGPU_MEMORY), ssn.space.index.get(VGPU_CORES)
        for uid, task in self._held.items():
            holding, job = devices.holdings.get(uid), ssn.jobs.get(task.job)
            if holding is None or job is None or task.pod.vgpu is None or task.status not in ALLOCATED_STATUSES:
                continue
            delta = ssn.space.zeros()
            if memory is not None:
                delta[memory] = sum(mem for _, mem, _ in holding.uses) - task.resreq[memory]
            if cores is not None:
                delta[cores] = sum(c for _, _, c in holding.uses) - task.resreq[cores]
            ssn.add_queue_allocated(job.queue, delta)

    # -- what Volcano's vGPU metrics report -------------------------------------------------------------

    def _figures(self, ssn: Session, devices: DeviceTable) -> tuple[DeviceFigures, PodFigures]:
        """Every GPU of the nodes with vGPUs and what each pod holds on each, as the session left them
        (Volcano sets volcano_vgpu_device_* as its node books take and free pods' GPUs). The table is
        done with: pipelined tasks' GPUs, held for this session's predicates, are freed first, as
        Volcano's node books give a pipelined task none."""
        nodes, pods = ssn.nodes.nodes, PodFigures()
        for uid, task in self._held.items():
            holding = devices.holdings.get(uid)
            if holding is None or task.status not in ALLOCATED_STATUSES:
                devices.release(uid)
                continue
            uuids, node = devices.uuids[holding.row], nodes[holding.row].name
            for col, memory, cores in holding.uses:  # a pod's uses of one GPU summed
                key = (uuids[col], node, task.name)
                held = pods.get(key, _NONE_HELD)
                pods[key] = VGPUPodFigures(held.memory + memory, held.cores + cores)
        return _device_figures(devices, nodes), pods


def _device_figures(devices: DeviceTable, nodes: Sequence[NodeInfo]) -> DeviceFigures:
    """Per GPU (UUID, node): its memory, and the pods, MiB and cores the table counts on it."""
    out: DeviceFigures = {}
    for row, uuids in devices.uuids.items():
        name, width = nodes[row].name, len(uuids)  # the grids are padded to the widest node
        grids = (devices.memory, devices.used_num, devices.used_mem, devices.used_core)
        for uuid, *figures in zip(uuids, *(grid[row, :width].tolist() for grid in grids), strict=True):
            out[(uuid, name)] = VGPUDeviceFigures(*figures)
    return out


_KINDS: Final = (
    (Failure.MODE, False),
    (Failure.COUNT, False),
    (Failure.FILTER, False),
    (Failure.SIZE, False),
    (Failure.BUSY, True),
)


def reason(why: int, request: VGPUPodRequest, container: int) -> str:
    """The failure as one sentence per kind and request (the histogram counts nodes per sentence)."""
    want = request.containers[container]
    memory = f"{want.memory} MiB of device memory" if want.memory else "a whole GPU's memory"
    share = f"{memory} and {want.cores}% of its cores" if want.cores else memory
    few = "no GPU of the node(s)" if want.number == 1 else f"node(s) have fewer than {want.number} GPUs that"
    match why:
        case Failure.MODE:
            return (
                f"deviceshare: node(s) share GPUs in {HAMI_CORE} mode, the pod asks volcano.sh/vgpu-mode {request.mode}"
            )
        case Failure.COUNT:
            return (
                f"deviceshare: node(s) have fewer than the {want.number} GPUs a container asks (volcano.sh/vgpu-number)"
            )
        case Failure.FILTER:
            verb = "matches" if want.number == 1 else "match"
            return f"deviceshare: {few} {verb} the GPU type and UUID annotations of the pod"
        case Failure.SIZE:
            each = "" if want.number == 1 else " each"
            return (
                f"deviceshare: {few} could{each} hold {share} (a container's share of a GPU must fit on that one GPU)"
            )
    return f"deviceshare: {few} {'has' if want.number == 1 else 'have'} a free share with {share} left"


def _group_of(task: TaskInfo) -> str:
    name = next((task.pod.annotations[k] for k in GROUP_NAME_KEYS if task.pod.annotations.get(k)), "")
    return f"{task.namespace}/{name}" if name else ""

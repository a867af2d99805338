"""Shared GPUs (vGPU) as Volcano's device plugin describes them, read into snapshot views.

A node's GPUs come from the annotation `volcano.sh/node-vgpu-register` that the vGPU device plugin
(Project-HAMi/volcano-vgpu-device-plugin) writes, one `UUID,count,memoryMiB,type,health,mode:` entry per
GPU, and count only while the node's allocatable has `volcano.sh/vgpu-number`, `volcano.sh/vgpu-cores`
and `volcano.sh/vgpu-memory` (Volcano's vgpu.NewGPUDevices). A pod asks through container limits:
`volcano.sh/vgpu-number` GPUs per container, `volcano.sh/vgpu-memory` MiB and `volcano.sh/vgpu-cores`
percent of each (Volcano's devices.ExtractResourceRequest with the default device config). The GPUs a
placed pod holds are in its annotation `volcano.sh/vgpu-ids-new`: per container (`;` between), one
`UUID,NVIDIA,memoryMiB,cores:` entry per GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity

VGPU_NUMBER: Final = "volcano.sh/vgpu-number"
VGPU_MEMORY: Final = "volcano.sh/vgpu-memory"
VGPU_CORES: Final = "volcano.sh/vgpu-cores"
NODE_REGISTER: Final = "volcano.sh/node-vgpu-register"
# What the scheduler writes on a pod it places (Volcano's vgpu.Allocate).
ASSIGNED_NODE: Final = "volcano.sh/vgpu-node"
ASSIGNED_TIME: Final = "volcano.sh/vgpu-time"
ASSIGNED_IDS: Final = "volcano.sh/vgpu-ids-new"
DEVICES_TO_ALLOCATE: Final = "volcano.sh/devices-to-allocate"
BIND_PHASE: Final = "volcano.sh/bind-phase"
BIND_TIME: Final = "volcano.sh/bind-time"
# What a pod may say about the GPUs it takes.
MODE_ANNOTATION: Final = "volcano.sh/vgpu-mode"
USE_TYPE: Final = "nvidia.com/use-gputype"
NOUSE_TYPE: Final = "nvidia.com/nouse-gputype"
USE_UUID: Final = "volcano.sh/vgpu-use-gpuuuid"
NOUSE_UUID: Final = "volcano.sh/vgpu-nouse-gpuuuid"
PODGROUP_POLICY: Final = "volcano.sh/vgpu-podgroup-policy"
GROUP_NAME_KEYS: Final = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")

HAMI_CORE: Final = "hami-core"
REQUEST_TYPE: Final = "NVIDIA"
# MemPercentagereq 101: "no percentage, use the memory in MiB"; with no memory either, 100% of the GPU.
NO_PERCENTAGE: Final = 101
WHOLE_DEVICE: Final = 100


@dataclass(frozen=True, slots=True)
class VGPUDevice:
    """One physical GPU of a node: `number` pods may share it, `memory` MiB of device memory."""

    uuid: str
    number: int
    memory: int
    type: str  # "NVIDIA-<model>"
    health: bool  # as registered; Volcano does not filter on it, nor does Tephra


@dataclass(frozen=True, slots=True)
class VGPUInventory:
    devices: tuple[VGPUDevice, ...]
    # The sharing mode. `mig` needs Volcano's MIG geometry ConfigMap, which Tephra does not read: such
    # a node falls back to hami-core, as Volcano does when no geometry matches the GPU.
    mode: str = HAMI_CORE


@dataclass(frozen=True, slots=True)
class VGPUContainerRequest:
    number: int  # GPUs, each a different one
    memory: int  # MiB on each (0: not given)
    percentage: int  # of each GPU's memory; NO_PERCENTAGE: use `memory`
    cores: int  # percent of each GPU's cores

    def memory_on(self, device_memory: int) -> int:
        """The MiB this container takes on a GPU of `device_memory` (Volcano's memreqForCard)."""
        return device_memory * self.percentage // 100 if self.percentage != NO_PERCENTAGE else self.memory


@dataclass(frozen=True, slots=True)
class VGPUPodRequest:
    """What a pod asks of shared GPUs: its containers' requests and the annotations that filter GPUs."""

    containers: tuple[VGPUContainerRequest, ...]
    mode: str = ""  # volcano.sh/vgpu-mode ("" any)
    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    use_uuids: tuple[str, ...] = ()
    nouse_uuids: tuple[str, ...] = ()
    spread_group: str = ""  # "<ns>/<group>" with volcano.sh/vgpu-podgroup-policy: spread

    @property
    def filters(self) -> bool:
        return bool(self.use_types or self.nouse_types or self.use_uuids or self.nouse_uuids)


class _Resources(Protocol):
    @property
    def limits(self) -> Mapping[str, str | int | float]: ...

    @property
    def requests(self) -> Mapping[str, str | int | float]: ...


class _Container(Protocol):
    @property
    def resources(self) -> _Resources: ...


# -- nodes --------------------------------------------------------------------------------------------


def node_inventory(annotations: Mapping[str, str], allocatable: Mapping[str, object]) -> VGPUInventory | None:
    """The node's GPUs, or None when it registers none (or not all three vGPU resources are allocatable,
    or an entry is malformed: Volcano then ignores the node's GPUs altogether)."""
    text = annotations.get(NODE_REGISTER)
    if text is None or not all(allocatable.get(name) for name in (VGPU_NUMBER, VGPU_CORES, VGPU_MEMORY)):
        return None
    if ":" not in text:
        return None
    devices = []
    for entry in text.split(":"):
        if "," not in entry:
            continue
        items = entry.split(",")
        if len(items) < 6:
            return None
        devices.append(VGPUDevice(items[0], _atoi(items[1]), _atoi(items[2]), items[3], items[4].lower() == "true"))
    return VGPUInventory(tuple(devices)) if devices else None


def encode_node_devices(devices: Sequence[VGPUDevice], mode: str = HAMI_CORE) -> str:
    """The register annotation as the device plugin writes it (EncodeNodeDevices)."""
    return "".join(f"{d.uuid},{d.number},{d.memory},{d.type},{str(d.health).lower()},{mode}:" for d in devices)


def _atoi(text: str) -> int:
    """Go's strconv.Atoi with the error ignored, as Volcano reads the register entries."""
    try:
        return int(text)
    except ValueError:
        return 0


# -- pods ---------------------------------------------------------------------------------------------


def asks_vgpu(containers: Sequence[_Container]) -> bool:
    """Whether a container limits vgpu-number or vgpu-memory (Volcano's checkVGPUResourcesInPod)."""
    for container in containers:  # every pod the loader decodes passes here: a plain loop, no generator
        limits = container.resources.limits
        if limits and (VGPU_NUMBER in limits or VGPU_MEMORY in limits):
            return True
    return False


def pod_request(
    containers: Sequence[_Container], annotations: Mapping[str, str], namespace: str
) -> VGPUPodRequest | None:
    """The pod's vGPU request, or None when it asks for none."""
    if not asks_vgpu(containers):
        return None
    requests = tuple(r for r in (_container_request(c) for c in containers) if r is not None)
    group = ""
    if annotations.get(PODGROUP_POLICY) == "spread":
        name = next((annotations[k] for k in GROUP_NAME_KEYS if annotations.get(k)), "")
        group = f"{namespace}/{name}" if name else ""
    return VGPUPodRequest(
        containers=requests,
        mode=annotations.get(MODE_ANNOTATION, ""),
        use_types=_words(annotations.get(USE_TYPE)),
        nouse_types=_words(annotations.get(NOUSE_TYPE)),
        use_uuids=_words(annotations.get(USE_UUID)),
        nouse_uuids=_words(annotations.get(NOUSE_UUID)),
        spread_group=group,
    )


def _container_request(container: _Container) -> VGPUContainerRequest | None:
    limits, requests = container.resources.limits, container.resources.requests
    if VGPU_NUMBER in limits:
        number = _whole(limits[VGPU_NUMBER])
    elif VGPU_MEMORY in limits:
        number = 1
    else:
        return None
    memory = _whole(limits.get(VGPU_MEMORY, requests.get(VGPU_MEMORY, 0)))
    cores = _whole(limits.get(VGPU_CORES, requests.get(VGPU_CORES, 0)))
    return VGPUContainerRequest(number, memory, NO_PERCENTAGE if memory else WHOLE_DEVICE, cores)


def _whole(value: str | int | float) -> int:
    """A quantity as a whole number (Volcano's Quantity.AsInt64; a fraction or a bad value counts 0)."""
    try:
        amount = parse_quantity(value, field="vgpu")
    except InvalidObject:
        return 0
    return int(amount) if amount.denominator == 1 else 0


def _words(text: str | None) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split(",") if w.strip()) if text else ()


# -- the GPUs a placed pod holds ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceUse:
    uuid: str
    memory: int
    cores: int


class VGPUDeviceFigures(NamedTuple):
    """One GPU as Volcano's vGPU metrics report it (keyed by its UUID and node): its device memory (MiB),
    the pods sharing it, the memory (MiB) and cores (percent) they hold."""

    memory_limit: int
    shared_number: int
    allocated_memory: int
    allocated_cores: int


class VGPUPodFigures(NamedTuple):
    """What one pod holds on one GPU (keyed by the GPU's UUID, its node and the pod's name): MiB, percent."""

    memory: int
    cores: int


def decode_assignment(text: str) -> tuple[tuple[DeviceUse, ...], ...]:
    """`volcano.sh/vgpu-ids-new` per container; malformed entries are skipped (DecodePodDevices)."""
    if not text:
        return ()
    containers = []
    for part in text.split(";"):
        uses = []
        for entry in part.split(":"):
            items = entry.split(",")
            if len(items) < 4 or not items[2].isdigit() or not items[3].isdigit():
                continue
            uses.append(DeviceUse(items[0], int(items[2]), int(items[3])))
        containers.append(tuple(uses))
    return tuple(containers)


def encode_assignment(containers: Sequence[Sequence[DeviceUse]]) -> str:
    """The annotation value, as Volcano's encodePodDevices writes it."""
    return ";".join("".join(f"{u.uuid},{REQUEST_TYPE},{u.memory},{u.cores}:" for u in uses) for uses in containers)

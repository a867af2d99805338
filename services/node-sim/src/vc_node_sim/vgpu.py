"""Shareable GPUs on simulated nodes, published as Volcano's vGPU device plugin publishes them
(Project-HAMi/volcano-vgpu-device-plugin: RegisterInAnnotation and its three extended resources).

Each node gets `count` GPUs of `memory` MiB, each shareable by `split` pods (the plugin's
deviceSplitCount): the annotation `volcano.sh/node-vgpu-register` with one
`<uuid>,<split>,<MiB>,NVIDIA-<model>,true,hami-core:` entry per GPU, and allocatable
`volcano.sh/vgpu-number` (count x split), `volcano.sh/vgpu-memory` (count x MiB) and
`volcano.sh/vgpu-cores` (count x 100). The scheduler reads them back in
vc_sched_core.snapshot.vgpu.node_inventory.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Final

from vc_core.errors import ConfigError

REGISTER: Final = "volcano.sh/node-vgpu-register"
NUMBER: Final = "volcano.sh/vgpu-number"
MEMORY: Final = "volcano.sh/vgpu-memory"
CORES: Final = "volcano.sh/vgpu-cores"
MODEL: Final = "NVIDIA-Tephra-SimGPU"  # the plugin writes "NVIDIA-<the NVML device name>"
_UUIDS: Final = uuid.UUID("5c3b7f4e-2f0a-4d5e-9a57-7e1f3c0b9d21")  # namespace of the GPUs' uuids


@dataclass(frozen=True, slots=True)
class VGPUShape:
    count: int  # GPUs per node
    memory: int  # MiB per GPU
    split: int  # pods that may share one GPU

    @classmethod
    def of(cls, count: int, memory: int, split: int) -> VGPUShape | None:
        """The flags' shape; None without GPUs. ConfigError (exit 2) for a count, size or split out of range."""
        if count < 0 or count > 64:
            raise ConfigError("--vgpus-per-node must be between 0 and 64")
        if count == 0:
            return None
        if memory < 1:
            raise ConfigError("--vgpu-memory must be at least 1 (MiB per GPU)")
        if split < 1:
            raise ConfigError("--vgpu-split must be at least 1 (pods per GPU)")
        return cls(count, memory, split)

    def allocatable(self) -> dict[str, str]:
        return {
            NUMBER: str(self.count * self.split),
            MEMORY: str(self.count * self.memory),
            CORES: str(self.count * 100),
        }

    def annotations(self, node: str) -> dict[str, str]:
        entries = (f"{gpu_uuid(node, i)},{self.split},{self.memory},{MODEL},true,hami-core:" for i in range(self.count))
        return {REGISTER: "".join(entries)}


def gpu_uuid(node: str, index: int) -> str:
    """A stable uuid per node and GPU, in NVML's `GPU-<uuid>` form (the same after a restart)."""
    return f"GPU-{uuid.uuid5(_UUIDS, f'{node}/{index}')}"

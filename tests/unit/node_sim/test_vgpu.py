"""`--vgpus-per-node N --vgpu-memory MiB --vgpu-split S`: the GPU inventory node-sim publishes, in the
vGPU device plugin's format, as the scheduler reads it back (pure)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vc_core.errors import ConfigError
from vc_node_sim.statuses import node_object
from vc_node_sim.vgpu import MODEL, VGPUShape, gpu_uuid
from vc_sched_core.snapshot.vgpu import VGPUDevice, node_inventory


def test_the_shape_publishes_the_plugins_annotation_and_resources() -> None:
    shape = VGPUShape.of(2, 24576, 4)
    assert shape is not None
    assert shape.allocatable() == {
        "volcano.sh/vgpu-number": "8",
        "volcano.sh/vgpu-memory": "49152",
        "volcano.sh/vgpu-cores": "200",
    }
    annotations = shape.annotations("node-3")
    first, second = gpu_uuid("node-3", 0), gpu_uuid("node-3", 1)
    assert annotations["volcano.sh/node-vgpu-register"] == (
        f"{first},4,24576,{MODEL},true,hami-core:{second},4,24576,{MODEL},true,hami-core:"
    )
    assert first.startswith("GPU-") and first != second and gpu_uuid("node-3", 0) == first  # stable
    allocatable = {name: Fraction(value) for name, value in shape.allocatable().items()}
    inventory = node_inventory(annotations, allocatable)  # the scheduler's reading of it
    assert inventory is not None
    assert inventory.devices == (VGPUDevice(first, 4, 24576, MODEL, True), VGPUDevice(second, 4, 24576, MODEL, True))


@pytest.mark.parametrize(("count", "memory", "split"), [(-1, 1, 1), (65, 1, 1), (1, 0, 1), (1, 1, 0)])
def test_bad_shapes_are_config_errors(count: int, memory: int, split: int) -> None:
    with pytest.raises(ConfigError, match="--vgpu"):
        VGPUShape.of(count, memory, split)


def test_no_gpus_is_no_shape() -> None:
    assert VGPUShape.of(0, 0, 0) is None


def test_the_node_keeps_other_annotations_and_a_heartbeat_keeps_the_inventory() -> None:
    shape = VGPUShape.of(1, 8000, 10)
    assert shape is not None
    capacity = {"cpu": "8", **shape.allocatable()}
    first = node_object("n1", capacity=capacity, ready=True, now="t0", annotations=shape.annotations("n1"))
    assert first.metadata.annotations and "volcano.sh/node-vgpu-register" in first.metadata.annotations
    assert first.status is not None and first.status.allocatable == capacity
    marked = first.metadata.annotations | {"operator/note": "x"}
    existing = type(first)(api_version=first.api_version, metadata=type(first.metadata)(name="n1", annotations=marked))
    again = node_object("n1", capacity=capacity, ready=True, now="t1", existing=existing, annotations=None)
    assert again.metadata.annotations == marked  # a heartbeat without annotations keeps what is stored

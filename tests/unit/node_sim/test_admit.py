"""node-sim admits a pod as a kubelet does: valid, and fitting beside what its node runs."""

from __future__ import annotations

from fractions import Fraction

import pytest

from vc_node_sim.admit import admit, pod_requests
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta

NODE = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "1"}


def pod(*containers: Container, init: list[Container] | None = None, overhead: dict[str, str] | None = None) -> Pod:
    spec = PodSpec(node_name="node-0", containers=list(containers) or [box()], init_containers=init, overhead=overhead)
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name="p", namespace="default"), spec=spec)


def box(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, name: str = "main") -> Container:
    return Container(name=name, resources=ResourceRequirements(requests=requests, limits=limits))


def test_a_pod_that_fits_is_admitted() -> None:
    assert admit(pod(box({"cpu": "2", "nvidia.com/gpu": "1"})), allocatable=NODE, running=[]) is None


def test_a_pod_asking_more_than_its_node_has_is_rejected_naming_the_resource() -> None:
    rejection = admit(pod(box({"nvidia.com/gpu": "100"})), allocatable=NODE, running=[])
    assert rejection is not None and rejection.reason == "OutOfnvidia.com/gpu"
    assert rejection.message == (
        "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, requested: 100, used: 0, capacity: 1"
    )


def test_the_pods_it_already_runs_count() -> None:
    running = [pod_requests(pod(box({"nvidia.com/gpu": "1", "cpu": "30"})))]
    rejection = admit(pod(box({"nvidia.com/gpu": "1"})), allocatable=NODE, running=running)
    assert rejection is not None and rejection.reason == "OutOfnvidia.com/gpu" and "used: 1" in rejection.message
    cpu = admit(pod(box({"cpu": "3"})), allocatable=NODE, running=running)
    assert cpu is not None and cpu.reason == "OutOfcpu"
    assert admit(pod(box({"cpu": "2"})), allocatable=NODE, running=running) is None


def test_the_pod_count_is_a_resource_too() -> None:
    full = [pod_requests(pod()) for _ in range(2)]
    rejection = admit(pod(), allocatable={**NODE, "pods": "2"}, running=full)
    assert rejection is not None and rejection.reason == "OutOfpods"


def test_a_resource_the_node_does_not_have_does_not_fit() -> None:
    rejection = admit(pod(box({"example.com/fpga": "1"})), allocatable=NODE, running=[])
    assert rejection is not None and rejection.reason == "OutOfexample.com/fpga" and "capacity: 0" in rejection.message


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(pod(box(limits={"cpu": "2"})), {"cpu": Fraction(2)}, id="request-defaults-to-limit"),
        pytest.param(pod(box({"cpu": "1"}, {"cpu": "4"})), {"cpu": Fraction(1)}, id="request-wins-over-limit"),
        pytest.param(
            pod(box({"cpu": "1"}, name="a"), box({"cpu": "1"}, name="b"), init=[box({"cpu": "3"}, name="i")]),
            {"cpu": Fraction(3)},
            id="largest-init-container",
        ),
        pytest.param(pod(box({"cpu": "1"}), overhead={"cpu": "250m"}), {"cpu": Fraction(5, 4)}, id="overhead"),
    ],
)
def test_requests_are_the_schedulers(target: Pod, expected: dict[str, Fraction]) -> None:
    assert pod_requests(target) == {**expected, "pods": Fraction(1)}


def test_a_pod_admission_would_refuse_is_rejected_as_invalid() -> None:
    meta = ObjectMeta(name="p", namespace="default")
    empty = Pod(api_version=CORE_V1, metadata=meta, spec=PodSpec(node_name="node-0"))
    rejection = admit(empty, allocatable=NODE, running=[])
    assert rejection is not None and rejection.reason == "Invalid"
    assert rejection.message.startswith("Pod was rejected: spec.containers: ")

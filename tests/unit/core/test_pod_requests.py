"""A pod's requests by Kubernetes' rule: the sum of its containers, at least each init container, plus the
overhead; a missing request is the limit. The same answer for the wire's PodSpec and the scheduler's."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import pytest

from vc_core.errors import InvalidObject
from vc_core.pod_requests import container_requests, pod_requests
from vc_proto.core import Container, PodSpec, ResourceRequirements
from vc_sched_core.snapshot import kube

Amounts = dict[str, str | int | float]


def wire_spec(containers: list[Amounts], init: tuple[Amounts, ...] = (), overhead: Amounts | None = None) -> PodSpec:
    def container(name: str, requests: Amounts) -> Container:
        return Container(name=name, resources=ResourceRequirements(requests=requests))

    return PodSpec(
        containers=[container(f"c{i}", r) for i, r in enumerate(containers)],
        init_containers=[container(f"i{i}", r) for i, r in enumerate(init)] or None,
        overhead=overhead,
    )


def snapshot_spec(
    containers: list[Amounts], init: tuple[Amounts, ...] = (), overhead: Amounts | None = None
) -> kube.PodSpec:
    def container(requests: Amounts) -> kube.Container:
        return kube.Container(resources=kube.ResourceRequirements(requests=requests))

    return kube.PodSpec(
        containers=[container(r) for r in containers],
        init_containers=[container(r) for r in init],
        overhead=overhead or {},
    )


@pytest.mark.parametrize("spec", [wire_spec, snapshot_spec])
def test_containers_add_up_each_init_container_sets_a_floor_and_overhead_comes_on_top(spec: Callable[..., Any]) -> None:
    built = spec(
        [{"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "nvidia.com/gpu": "1"}],
        init=({"cpu": "2", "memory": "512Mi"}, {"memory": "3Gi"}),
        overhead={"cpu": "100m", "memory": "64Mi"},
    )
    assert pod_requests(built) == {
        "cpu": Fraction(21, 10),  # max(0.5 + 1, 2, 0) + 0.1
        "memory": Fraction(3 * 2**30 + 64 * 2**20),  # max(1Gi, 512Mi, 3Gi) + 64Mi
        "nvidia.com/gpu": Fraction(1),
    }


def test_a_missing_request_is_the_limit_and_a_given_one_wins() -> None:
    container = Container(
        name="main", resources=ResourceRequirements(limits={"cpu": "2", "memory": "2Gi"}, requests={"cpu": "1"})
    )
    assert container_requests(container) == {"cpu": Fraction(1), "memory": Fraction(2 * 2**30)}
    assert pod_requests(PodSpec(containers=[container])) == {"cpu": Fraction(1), "memory": Fraction(2 * 2**30)}


def test_no_spec_and_no_resources_ask_for_nothing() -> None:
    assert pod_requests(None) == {}
    assert pod_requests(PodSpec(containers=[Container(name="main")])) == {}


def test_an_amount_that_does_not_parse_is_refused_naming_its_field() -> None:
    spec = wire_spec([{"cpu": "1"}], init=({"cpu": "lots"},))
    with pytest.raises(InvalidObject) as refused:
        pod_requests(spec)
    assert refused.value.field == "spec.initContainers[0].resources.requests.cpu"


def test_lenient_counts_an_amount_that_does_not_parse_as_nothing() -> None:
    spec = wire_spec([{"cpu": "1", "memory": "many"}], overhead={"cpu": "bad", "memory": "1Mi"})
    assert pod_requests(spec, lenient=True) == {"cpu": Fraction(1), "memory": Fraction(2**20)}

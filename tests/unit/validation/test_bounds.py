"""Quantities are bounded, devices are whole, node-sim's annotations say what they mean."""

from __future__ import annotations

import pytest
import yaml
from msgspec.structs import replace

from tests.unit.admission.admission_builders import container, context, job, pod, task, template
from vc_proto.core import PodTemplateSpec
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import QueueSpec
from vc_validation import review, validate_pod
from vc_validation.queue_resources import validate_queue_resources
from vc_validation.simulation import parse_sim_duration, parse_sim_exit_code


def rules_of_job_with(
    *, requests: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, str]:
    spec = template(container(requests=requests)).spec
    tmpl = PodTemplateSpec(metadata=ObjectMeta(annotations=annotations), spec=spec)
    verdict = review("CREATE", job("j", task(template=tmpl)), None, context())
    return {v.field: v.rule for v in verdict.violations}


@pytest.mark.parametrize(
    ("requests", "field", "rule"),
    [
        pytest.param({"cpu": "1e29"}, "cpu", "quantity-max", id="cpu-1e29"),
        pytest.param({"memory": "9Ei"}, "memory", "quantity-max", id="memory-9Ei"),
        pytest.param({"nvidia.com/gpu": "0.5"}, "nvidia.com/gpu", "extended-resource-integer", id="half-a-gpu"),
        pytest.param({"example.com/fpga": "1500m"}, "example.com/fpga", "extended-resource-integer", id="fpga-1.5"),
    ],
)
def test_a_container_request_out_of_bounds_is_refused_naming_the_field_and_the_rule(
    requests: dict[str, str], field: str, rule: str
) -> None:
    path = f"spec.tasks[0].template.spec.containers[0].resources.requests[{field}]"
    assert rules_of_job_with(requests=requests) == {path: rule}


@pytest.mark.parametrize(
    "requests",
    [{"cpu": "500m"}, {"cpu": "1e6"}, {"nvidia.com/gpu": "2"}, {"hugepages-2Mi": "1Mi"}, {"memory": "1.5Gi"}],
)
def test_sane_requests_pass(requests: dict[str, str]) -> None:
    assert rules_of_job_with(requests=requests) == {}


def test_a_queue_is_bounded_too_but_may_share_devices() -> None:
    found = list(validate_queue_resources(QueueSpec(capability={"cpu": "1e29", "nvidia.com/gpu": "0.5"})))
    assert [(v.field, v.rule) for v in found] == [("spec.capability.cpu", "quantity-max")]


@pytest.mark.parametrize(
    ("annotations", "rule"),
    [
        pytest.param({"sim.tephra.dev/duration": "-5s"}, "sim-duration", id="negative"),
        pytest.param({"sim.tephra.dev/duration": "soon"}, "sim-duration", id="garbage"),
        pytest.param({"sim.tephra.dev/exit-code": "-1"}, "sim-exit-code", id="negative-exit"),
        pytest.param({"sim.tephra.dev/exit-code": "256"}, "sim-exit-code", id="exit-too-big"),
        pytest.param({"sim.tephra.dev/exit-code": "x"}, "sim-exit-code", id="exit-garbage"),
    ],
)
def test_node_sims_annotations_are_refused_when_they_are_not_values(annotations: dict[str, str], rule: str) -> None:
    key = next(iter(annotations))
    field = f"spec.tasks[0].template.metadata.annotations[{key}]"
    assert rules_of_job_with(annotations=annotations) == {field: rule}
    plain = replace(pod(), metadata=replace(pod().metadata, annotations=annotations))
    assert [(v.field, v.rule) for v in validate_pod(plain)] == [(f"metadata.annotations[{key}]", rule)]
    assert [v.rule for v in review("UPDATE", plain, pod(), context()).violations] == [rule]


def test_good_annotations_mean_what_they_say() -> None:
    assert parse_sim_duration("1m30s") == 90.0 and parse_sim_duration("0") == 0.0
    assert parse_sim_exit_code("0") == 0 and parse_sim_exit_code("255") == 255
    assert rules_of_job_with(annotations={"sim.tephra.dev/duration": "2s", "sim.tephra.dev/exit-code": "3"}) == {}


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", ".NaN"])
def test_a_non_finite_quantity_from_yaml_is_refused_naming_the_resource(value: str) -> None:
    requests = yaml.safe_load(f"cpu: {value}")
    spec = template(container(requests=requests)).spec
    verdict = review("CREATE", job("j", task(template=PodTemplateSpec(spec=spec))), None, context())
    path = "spec.tasks[0].template.spec.containers[0].resources.requests[cpu]"
    assert not verdict.allowed
    assert [(v.field, v.rule) for v in verdict.violations] == [(path, "quantity")]
    assert f"{path}: must be a finite quantity" in verdict.message

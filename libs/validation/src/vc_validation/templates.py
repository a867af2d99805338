"""The parts of a task's pod template admission checks.

Volcano runs Kubernetes' full `ValidatePodTemplate`; in the `kube` backend the API server does that
again for every pod. Here we check what Tephra itself depends on: at least one container, container
names, parseable and consistent resource quantities, and Volcano's integer-CPU rule for NUMA policies.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from vc_admission.rules.limits import MAX_CONTAINERS
from vc_admission.rules.names import dns1123_label_errors, format_errors
from vc_admission.rules.resource_lists import parse_resource_list
from vc_admission.rules.verdict import Violation
from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_proto.batch import TaskSpec
from vc_proto.core import Container, ResourceRequirements

TOPOLOGY_POLICIES: Final = frozenset({"none", "best-effort", "restricted", "single-numa-node"})
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")


def validate_template(task: TaskSpec, path: str) -> Iterator[Violation]:
    spec = task.template.spec if task.template else None
    containers = (spec.containers or []) if spec else []
    init_containers = (spec.init_containers or []) if spec else []
    if not containers:
        yield Violation(
            f"{path}.template.spec.containers", "template-containers", "Required value: at least one container"
        )
        return
    if len(containers) + len(init_containers) > MAX_CONTAINERS:
        yield Violation(
            f"{path}.template.spec.containers",
            "containers-count",
            f"may not have more than {MAX_CONTAINERS} containers",
        )
        return
    if spec is not None and spec.restart_policy not in (None, *RESTART_POLICIES):
        yield Violation(
            f"{path}.template.spec.restartPolicy",
            "restart-policy",
            f'Unsupported value: "{spec.restart_policy[:64]}": supported values: "Always", "OnFailure", "Never"',
        )
    yield from _validate_containers(containers, f"{path}.template.spec.containers", set())
    yield from _validate_containers(
        init_containers, f"{path}.template.spec.initContainers", {c.name for c in containers}
    )
    yield from _validate_topology(task, path, [*containers, *init_containers])


def _validate_containers(containers: Sequence[Container], path: str, taken: set[str]) -> Iterator[Violation]:
    seen = set(taken)
    for index, container in enumerate(containers):
        here = f"{path}[{index}]"
        if errors := dns1123_label_errors(container.name):
            yield Violation(f"{here}.name", "container-name", format_errors(errors))
        elif container.name in seen:
            yield Violation(f"{here}.name", "container-name-unique", f"Duplicate value: {container.name!r}")
        seen.add(container.name)
        yield from _validate_resources(container.resources, f"{here}.resources")


def _validate_resources(resources: ResourceRequirements | None, path: str) -> Iterator[Violation]:
    if resources is None:
        return
    requests = yield from parse_resource_list(resources.requests, f"{path}.requests", bracketed=True)
    limits = yield from parse_resource_list(resources.limits, f"{path}.limits", bracketed=True)
    for name, requested in requests.items():
        if name in limits and requested > limits[name]:
            yield Violation(
                f"{path}.requests[{name}]",
                "request-exceeds-limit",
                f"Invalid value: must be less than or equal to {name} limit",
            )


def _validate_topology(task: TaskSpec, path: str, containers: Sequence[Container]) -> Iterator[Violation]:
    policy = task.topology_policy
    if policy is None or policy == "" or policy == "none":
        return
    if policy not in TOPOLOGY_POLICIES:
        yield Violation(
            f"{path}.topologyPolicy", "topology-policy", "must be one of [none best-effort restricted single-numa-node]"
        )
        return
    for index, container in enumerate(containers):
        if not _has_integer_cpu(container):
            yield Violation(
                f"{path}.template",
                "topology-integer-cpu",
                f"the cpu request isn't an integer in {path} container[{index}].",
            )
            return


def _has_integer_cpu(container: Container) -> bool:
    """Volcano `guaranteedCPUs` > 0: the cpu request (or limit when no request) is a whole, positive number."""
    resources = container.resources
    raw: Mapping[str, str | int | float] = {}
    if resources is not None:
        raw = resources.requests or resources.limits or {}
    try:
        cpu = parse_quantity(raw.get("cpu", 0))
    except InvalidObject:
        return False
    return cpu.denominator == 1 and cpu > 0

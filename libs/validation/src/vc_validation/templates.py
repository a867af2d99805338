"""The parts of a pod spec (a task's template, or a pod's own) admission checks.

Volcano runs Kubernetes' full `ValidatePodTemplate`; in the `kube` backend the API server does that
again for every pod. Here we check what Tephra itself depends on: at least one container, container
names, parseable, bounded and consistent resource quantities (whole extended resources), node-sim's
annotations, and Volcano's integer-CPU rule for NUMA policies.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_proto.batch import TaskSpec
from vc_proto.core import Container, PodSpec, ResourceRequirements
from vc_validation.limits import MAX_CONTAINERS
from vc_validation.names import dns1123_label_errors, format_errors
from vc_validation.resource_lists import parse_resource_list
from vc_validation.simulation import validate_sim_annotations
from vc_validation.verdict import Violation

TOPOLOGY_POLICIES: Final = frozenset({"none", "best-effort", "restricted", "single-numa-node"})
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
# After these the containers are not worth a closer look (and may be too many to look at).
_STOPPING: Final = frozenset({"template-containers", "containers-count"})


def validate_template(task: TaskSpec, path: str) -> Iterator[Violation]:
    template = task.template
    here = f"{path}.template"
    if template is not None and template.metadata is not None:
        yield from validate_sim_annotations(template.metadata.annotations, path=f"{here}.metadata.annotations")
    spec = template.spec if template else None
    problems = list(validate_pod_spec(spec, f"{here}.spec"))
    yield from problems
    if not any(v.rule in _STOPPING for v in problems):
        containers = [*((spec.containers or []) if spec else []), *((spec.init_containers or []) if spec else [])]
        yield from _validate_topology(task, path, containers)


def validate_pod_spec(spec: PodSpec | None, path: str) -> Iterator[Violation]:
    """A pod spec at `path` (`spec` of a pod, `spec.tasks[i].template.spec` of a job)."""
    containers = (spec.containers or []) if spec else []
    init_containers = (spec.init_containers or []) if spec else []
    if not containers:
        yield Violation(f"{path}.containers", "template-containers", "Required value: at least one container")
        return
    if len(containers) + len(init_containers) > MAX_CONTAINERS:
        yield Violation(f"{path}.containers", "containers-count", f"may not have more than {MAX_CONTAINERS} containers")
        return
    if spec is not None and spec.restart_policy not in (None, *RESTART_POLICIES):
        yield Violation(
            f"{path}.restartPolicy",
            "restart-policy",
            f'Unsupported value: "{spec.restart_policy[:64]}": supported values: "Always", "OnFailure", "Never"',
        )
    yield from _validate_containers(containers, f"{path}.containers", set())
    yield from _validate_containers(init_containers, f"{path}.initContainers", {c.name for c in containers})
    if spec is not None and spec.overhead:
        yield from parse_resource_list(spec.overhead, f"{path}.overhead", container=True)


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
    requests = yield from parse_resource_list(resources.requests, f"{path}.requests", bracketed=True, container=True)
    limits = yield from parse_resource_list(resources.limits, f"{path}.limits", bracketed=True, container=True)
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

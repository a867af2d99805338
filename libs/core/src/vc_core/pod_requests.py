"""What a pod asks of its node, by Kubernetes' rule (the kubelet's admission, kube-scheduler's and Volcano's
InitResreq): the sum of its containers' requests, at least what each init container asks (they run one
at a time, before the others), plus the pod's overhead. A container's missing request is its limit, as
the apiserver defaults it.

One rule for every model of a pod (the wire's vc_proto.core.PodSpec, the scheduler's snapshot PodSpec):
it reads only the fields below. Strict by default, an amount that does not parse is an error naming its
field; `lenient` counts such an amount as nothing, for readers that account for pods already stored
(admission refuses them on the way in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_core.resources import Resources, add, maximum, parse_resources

RawList = Mapping[str, str | int | float]


class ContainerResources(Protocol):
    @property
    def limits(self) -> RawList | None: ...
    @property
    def requests(self) -> RawList | None: ...


class ContainerLike(Protocol):
    @property
    def resources(self) -> ContainerResources | None: ...


class PodSpecLike(Protocol):
    @property
    def containers(self) -> Sequence[ContainerLike] | None: ...
    @property
    def init_containers(self) -> Sequence[ContainerLike] | None: ...
    @property
    def overhead(self) -> RawList | None: ...


def pod_requests(spec: PodSpecLike | None, *, lenient: bool = False) -> Resources:
    """Σ containers' requests, at least each init container's, plus overhead; {} for no spec."""
    if spec is None:
        return {}
    containers = spec.containers or ()
    total = add(*(container_requests(c, f"spec.containers[{i}]", lenient=lenient) for i, c in enumerate(containers)))
    for i, init in enumerate(spec.init_containers or ()):
        total = maximum(total, container_requests(init, f"spec.initContainers[{i}]", lenient=lenient))
    return add(total, _parse(spec.overhead, "spec.overhead", lenient))


def container_requests(container: ContainerLike, field: str = "container", *, lenient: bool = False) -> Resources:
    """One container's requests, a missing one taken from its limit (the apiserver's defaulting)."""
    resources = container.resources
    if resources is None:
        return {}
    return {
        **_parse(resources.limits, f"{field}.resources.limits", lenient),
        **_parse(resources.requests, f"{field}.resources.requests", lenient),
    }


def _parse(raw: RawList | None, field: str, lenient: bool) -> Resources:
    if not lenient:
        return parse_resources(raw, field=field)
    parsed: Resources = {}
    for name, value in (raw or {}).items():
        try:
            parsed[name] = parse_quantity(value, field=f"{field}.{name}")
        except InvalidObject:
            continue
    return parsed

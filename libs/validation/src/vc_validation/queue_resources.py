"""A queue's own resource lists: valid quantities, and guarantee <= deserved <= capability per resource
(Volcano `validateResourceQuantityOfQueue`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from fractions import Fraction

from vc_core.errors import InvalidObject
from vc_core.quantity import format_quantity
from vc_core.resources import Resources, parse_resources
from vc_proto.base import ResourceList
from vc_proto.scheduling import QueueSpec
from vc_validation.resource_lists import parse_resource_list
from vc_validation.verdict import Violation

_BINARY = frozenset({"memory", "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi"})


def show(name: str, value: Fraction) -> str:
    """A quantity as Kubernetes prints it (`2`, `500m`, `1Gi`)."""
    return format_quantity(value, binary=name in _BINARY)


def show_resources(res: Mapping[str, Fraction]) -> str:
    return ", ".join(f"{name} {show(name, value)}" for name, value in sorted(res.items()))


def safe_resources(raw: ResourceList | None) -> Resources:
    """Parsed resources of an already stored object; anything unparsable counts as absent."""
    try:
        return parse_resources(raw)
    except InvalidObject:
        return {}


def guarantee_of(spec: QueueSpec | None) -> ResourceList | None:
    return spec.guarantee.resource if spec and spec.guarantee else None


def validate_queue_resources(spec: QueueSpec) -> Iterator[Violation]:
    capability = yield from parse_resource_list(spec.capability, "spec.capability")
    deserved = yield from parse_resource_list(spec.deserved, "spec.deserved")
    guarantee = yield from parse_resource_list(guarantee_of(spec), "spec.guarantee.resource")
    for name, floor in guarantee.items():
        if name not in deserved:
            yield Violation(
                f"spec.deserved.{name}",
                "queue-deserved-guarantee",
                f"deserved[{name}] must be >= guarantee[{name}]={show(name, floor)}",
            )
        elif deserved[name] < floor:
            yield Violation(
                f"spec.deserved.{name}",
                "queue-deserved-guarantee",
                f"deserved[{name}]={show(name, deserved[name])} must be >= guarantee[{name}]={show(name, floor)}",
            )
    for name, amount in deserved.items():
        if name in capability and amount > capability[name]:
            yield Violation(
                f"spec.deserved.{name}",
                "queue-deserved-capability",
                f"deserved[{name}]={show(name, amount)} must be <= capability[{name}]={show(name, capability[name])}",
            )

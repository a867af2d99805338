"""A queue's own resource lists: valid quantities, and guarantee <= deserved <= capability per resource
(Volcano `validateResourceQuantityOfQueue`)."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from fractions import Fraction

from vc_core.errors import InvalidObject
from vc_core.quantity import format_quantity, parse_quantity
from vc_core.resources import Resources, parse_resources
from vc_proto.base import ResourceList
from vc_proto.scheduling import QueueSpec

from vc_admission.rules.limits import MAX_RESOURCE_NAMES
from vc_admission.rules.verdict import Violation

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
    capability = yield from _parse_list(spec.capability, "spec.capability")
    deserved = yield from _parse_list(spec.deserved, "spec.deserved")
    guarantee = yield from _parse_list(guarantee_of(spec), "spec.guarantee.resource")
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


def _parse_list(raw: ResourceList | None, path: str) -> Generator[Violation, None, dict[str, Fraction]]:
    parsed: dict[str, Fraction] = {}
    if not raw:
        return parsed
    if len(raw) > MAX_RESOURCE_NAMES:
        yield Violation(path, "resources-count", f"may not have more than {MAX_RESOURCE_NAMES} resources")
        return parsed
    for name, value in raw.items():
        try:
            amount = parse_quantity(value, field=f"{path}.{name}")
        except InvalidObject as error:
            yield Violation(error.field, "quantity", error.message)
            continue
        if amount < 0:
            yield Violation(
                f"{path}.{name}",
                "quantity-non-negative",
                f'Invalid value: "{value}": must be greater than or equal to 0',
            )
            continue
        parsed[name] = amount
    return parsed

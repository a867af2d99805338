"""Parse a user's ResourceList into exact amounts, yielding a Violation per bad entry (shared by queue
resources and pod templates). Entries are addressed `path.name` or, for container fields, `path[name]`.

Every amount is a quantity, at least 0 and at most MAX_QUANTITY (Kubernetes' int64 milli-units); a
container's extended resources (`nvidia.com/gpu`, any name with a domain outside kubernetes.io) must
be whole numbers, as Kubernetes requires: a device is not shared by halves.
"""

from __future__ import annotations

from collections.abc import Generator
from fractions import Fraction

from vc_core.errors import InvalidObject
from vc_core.quantity import format_quantity, parse_quantity
from vc_proto.base import ResourceList
from vc_validation.limits import MAX_QUANTITY, MAX_RESOURCE_NAMES
from vc_validation.verdict import Violation


def is_extended_resource(name: str) -> bool:
    """Kubernetes `IsExtendedResourceName`: a domain-prefixed name outside the kubernetes.io domains."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def parse_resource_list(
    raw: ResourceList | None, path: str, *, bracketed: bool = False, container: bool = False
) -> Generator[Violation, None, dict[str, Fraction]]:
    """`container`: the list is a container's requests or limits (extended resources must be whole)."""
    parsed: dict[str, Fraction] = {}
    if not raw:
        return parsed
    if len(raw) > MAX_RESOURCE_NAMES:
        yield Violation(path, "resources-count", f"may not have more than {MAX_RESOURCE_NAMES} resources")
        return parsed
    for name, value in raw.items():
        field = f"{path}[{name}]" if bracketed else f"{path}.{name}"
        try:
            amount = parse_quantity(value, field=field)
        except InvalidObject as error:
            yield Violation(error.field, "quantity", error.message)
            continue
        if problem := _amount_problem(name, value, amount, container=container):
            yield Violation(field, *problem)
            continue
        parsed[name] = amount
    return parsed


def _amount_problem(name: str, value: object, amount: Fraction, *, container: bool) -> tuple[str, str] | None:
    """(rule, message) for an amount that parses but is out of bounds."""
    shown = str(value)[:64]
    if amount < 0:
        return "quantity-non-negative", f'Invalid value: "{shown}": must be greater than or equal to 0'
    if amount > MAX_QUANTITY:
        return "quantity-max", f'Invalid value: "{shown}": must be at most {format_quantity(MAX_QUANTITY)}'
    if container and is_extended_resource(name) and amount.denominator != 1:
        return "extended-resource-integer", f'Invalid value: "{shown}": must be an integer'
    return None

"""Parse a user's ResourceList into exact amounts, yielding a Violation per bad entry (shared by queue
resources and pod templates). Entries are addressed `path.name` or, for container fields, `path[name]`."""

from __future__ import annotations

from collections.abc import Generator
from fractions import Fraction

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_proto.base import ResourceList
from vc_validation.limits import MAX_RESOURCE_NAMES
from vc_validation.verdict import Violation


def parse_resource_list(
    raw: ResourceList | None, path: str, *, bracketed: bool = False
) -> Generator[Violation, None, dict[str, Fraction]]:
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
        if amount < 0:
            yield Violation(field, "quantity-non-negative", f'Invalid value: "{value}": must be greater than or equal to 0')
            continue
        parsed[name] = amount
    return parsed

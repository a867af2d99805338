"""Resource amounts for people: `4`, `0.5`, `1.5Gi`; and quantities that may be malformed.

Objects on the bus are written by services and users alike; a quantity that does not parse is shown
as absent rather than stopping the page (the page is a reader, admission is where input is refused).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_core.resources import CPU, GPU, MEMORY, PODS, Resources

_BINARY_NAMES: Final = frozenset({MEMORY, "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi"})
_BINARY_UNITS: Final = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
# The order resources are listed in; others follow by name.
FIRST: Final = (CPU, MEMORY, GPU)


def parse_amounts(raw: Mapping[str, str | int | float] | None) -> Resources:
    """A ResourceList as numbers; entries that do not parse are left out."""
    out: Resources = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = parse_quantity(value)
        except InvalidObject:
            continue
    return out


def ordered(names: Iterable[str], *, skip: Iterable[str] = (PODS,)) -> list[str]:
    present = set(names) - set(skip)
    return [n for n in FIRST if n in present] + sorted(present - set(FIRST))


def human(resource: str, value: Fraction) -> str:
    """`4`, `2.5`, `0.25` for cores and counts (whole units, never Kubernetes' milli-units `250m`);
    `16Gi`, `1.5Gi` for bytes."""
    if resource in _BINARY_NAMES:
        for suffix, factor in _BINARY_UNITS:
            if abs(value) >= factor:
                return f"{_short(value / factor)}{suffix}"
        return _short(value)
    # Below one unit a thousandth still shows (a 1m CPU request is 0.001 cores, not 0).
    return _short(value, places=3 if abs(value) < 1 else 2)


def _short(value: Fraction, *, places: int = 2) -> str:
    """At most `places` decimals, without trailing zeros."""
    text = f"{float(value):.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def percent(value: Fraction, scale: Fraction) -> float:
    """value / scale in percent, within 0..100 (an empty scale draws nothing)."""
    if scale <= 0:
        return 0.0
    return float(min(max(value / scale, Fraction(0)), Fraction(1)) * 100)

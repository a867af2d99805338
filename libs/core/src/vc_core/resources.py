"""Resource lists (`{"cpu": "500m", "memory": "1Gi"}`) as exact numbers, and the arithmetic Volcano uses.

A `Resources` maps a resource name to a `Fraction` in base units (cores, bytes, devices). Missing names
are zero unless a function says otherwise. Values never go negative through `sub_floor`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final

from vc_core.quantity import format_quantity, parse_quantity

Resources = dict[str, Fraction]

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
GPU: Final = "nvidia.com/gpu"
# Volcano compares with an absolute slack of 0.1 in its own units (milli-cpu, bytes, milli-scalars).
# Converted to base units: 0.1 milli-cpu = 1e-4 cores, 0.1 byte, 1e-4 of a scalar device.
_TOLERANCE: Final = {CPU: Fraction(1, 10_000), MEMORY: Fraction(1, 10), PODS: Fraction(0)}
_SCALAR_TOLERANCE: Final = Fraction(1, 10_000)
_BINARY_NAMES: Final = frozenset({MEMORY, "ephemeral-storage", "hugepages-2Mi", "hugepages-1Gi"})


def quota_only(name: str) -> bool:
    """A Kubernetes quota key no node offers (`pods`, `limits.*`, `count/*`; `requests.<r>` stands for <r>)."""
    return name == PODS or name.startswith(("limits.", "count/"))


def schedulable_resources(resources: Mapping[str, Fraction]) -> Resources:
    """The resources a node offers, from a quota-style list such as a vcjob PodGroup's minResources.

    The job controller writes Kubernetes quota usage (`requests.cpu`, `limits.cpu`, `count/pods`,
    `pods`); Volcano's NewResource keeps only cpu, memory and scalar resources, so `limits.*` and
    `count/*` never constrain scheduling and `requests.<r>` stands for `<r>` when `<r>` is absent.
    """
    out: Resources = {}
    for name, value in resources.items():
        if quota_only(name):
            continue
        plain = name.removeprefix("requests.")
        out[plain] = out.get(plain, value) if name.startswith("requests.") else value
    return out


def tolerance(name: str) -> Fraction:
    return _TOLERANCE.get(name, _SCALAR_TOLERANCE)


def parse_resources(raw: Mapping[str, str | int | float] | None, *, field: str = "resources") -> Resources:
    """Parse a Kubernetes ResourceList; errors name `field.<resource>`."""
    if not raw:
        return {}
    return {name: parse_quantity(value, field=f"{field}.{name}") for name, value in raw.items()}


def format_resources(res: Mapping[str, Fraction]) -> dict[str, str]:
    """Canonical Kubernetes text for each resource (memory-like names get binary suffixes)."""
    return {name: format_quantity(value, binary=name in _BINARY_NAMES) for name, value in sorted(res.items())}


def add(*items: Mapping[str, Fraction]) -> Resources:
    """The sum per resource, exactly. Summed in integer thousandths while the amounts are whole
    thousandths (Kubernetes quantities nearly always are), the rest in Fractions: Fraction additions
    were most of the time of the ledger's writes and of node-sim's admissions."""
    milli: dict[str, int] = {}  # also the order in which names were first met
    rest: dict[str, Fraction] = {}
    for res in items:
        for name, value in res.items():
            denominator = value.denominator
            if denominator == 1:
                milli[name] = milli.get(name, 0) + value.numerator * 1000
            elif 1000 % denominator == 0:
                milli[name] = milli.get(name, 0) + value.numerator * (1000 // denominator)
            else:
                milli.setdefault(name, 0)
                rest[name] = rest.get(name, Fraction(0)) + value
    out = {name: Fraction(amount, 1000) for name, amount in milli.items()}
    for name, value in rest.items():
        out[name] += value
    return out


def scale(res: Mapping[str, Fraction], factor: int | Fraction) -> Resources:
    return {name: value * factor for name, value in res.items()}


def sub_floor(left: Mapping[str, Fraction], right: Mapping[str, Fraction]) -> Resources:
    """left - right per resource, floored at zero; names only in `right` are dropped."""
    return {name: max(Fraction(0), value - right.get(name, Fraction(0))) for name, value in left.items()}


def maximum(left: Mapping[str, Fraction], right: Mapping[str, Fraction]) -> Resources:
    names = set(left) | set(right)
    return {n: max(left.get(n, Fraction(0)), right.get(n, Fraction(0))) for n in names}


def less_equal(
    left: Mapping[str, Fraction], right: Mapping[str, Fraction], *, missing_is_infinite: bool = False
) -> bool:
    """Every resource of `left` fits in `right` (with Volcano's tolerance).

    A name absent from `right` counts as zero, or as unlimited when `missing_is_infinite`.
    """
    for name, value in left.items():
        if name not in right:
            if missing_is_infinite or value <= tolerance(name):
                continue
            return False
        if value > right[name] + tolerance(name):
            return False
    return True


def exceeding(left: Mapping[str, Fraction], right: Mapping[str, Fraction]) -> list[str]:
    """Names (sorted) whose `left` value exceeds `right` (absent in `right` means unlimited)."""
    return sorted(n for n, v in left.items() if n in right and v > right[n] + tolerance(n))


def is_empty(res: Mapping[str, Fraction], *, ignore: Iterable[str] = (PODS,)) -> bool:
    """True when nothing but the ignored names is requested (Volcano's BestEffort test ignores `pods`)."""
    skip = set(ignore)
    return all(value <= tolerance(name) for name, value in res.items() if name not in skip)

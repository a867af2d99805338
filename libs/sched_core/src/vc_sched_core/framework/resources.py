"""Resource vectors: one float per resource name of the session, NumPy arrays for node-wide arithmetic.

The `pods` count is not a vector dimension: nodes track it apart, like Volcano's MaxTaskNum.
Units: cpu in cores, memory in bytes, every other resource in its own units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from vc_core.quantity import format_quantity
from vc_core.resources import CPU, MEMORY, PODS, tolerance

Vector = NDArray[np.float64]
_BINARY = frozenset({MEMORY, "ephemeral-storage"})


@dataclass(frozen=True, slots=True)
class ResourceSpace:
    """The resource names of one session and their comparison tolerances."""

    names: tuple[str, ...]
    index: dict[str, int]
    tolerance: Vector

    @classmethod
    def of(cls, names: Iterable[str]) -> ResourceSpace:
        extra = sorted(set(names) - {CPU, MEMORY, PODS})
        ordered = (CPU, MEMORY, *extra)
        tol = np.array([float(tolerance(n)) for n in ordered], dtype=np.float64)
        return cls(ordered, {n: i for i, n in enumerate(ordered)}, tol)

    @property
    def size(self) -> int:
        return len(self.names)

    def zeros(self) -> Vector:
        return np.zeros(self.size, dtype=np.float64)

    def vector(self, res: Mapping[str, Fraction | float], *, missing: float = 0.0) -> Vector:
        """Names absent from `res` get `missing` (0 for requests, inf for capabilities)."""
        out = np.full(self.size, missing, dtype=np.float64)
        for name, value in res.items():
            if name in self.index:
                out[self.index[name]] = float(value)
        return out

    def dims(self, res: Mapping[str, object]) -> NDArray[np.bool_]:
        """Mask of the dimensions named in `res`."""
        mask = np.zeros(self.size, dtype=bool)
        for name in res:
            if name in self.index:
                mask[self.index[name]] = True
        return mask

    def format(self, vec: Vector, mask: NDArray[np.bool_] | None = None) -> str:
        """`cpu 2, memory 1Gi` for the chosen (default: non-zero) dimensions."""
        shown = mask if mask is not None else vec != 0
        parts = [f"{n} {format_amount(n, float(vec[i]))}" for i, n in enumerate(self.names) if shown[i]]
        return ", ".join(parts) if parts else "nothing"


def format_amount(name: str, value: float) -> str:
    if np.isinf(value):
        return "unlimited"
    return format_quantity(Fraction(value).limit_denominator(1000), binary=name in _BINARY)


_GIB = float(1 << 30)


def format_units(name: str, value: float) -> str:
    """An amount as a person counts it: whole units (`32`, `8.4`, `0.5`; memory in Gi), no milli-units."""
    if np.isinf(value):
        return "unlimited"
    if name in _BINARY:
        return f"{_trimmed(value / _GIB)}Gi"
    return _trimmed(value)


def _trimmed(value: float) -> str:
    return f"{round(value, 2):.2f}".rstrip("0").rstrip(".")


def less_equal(left: Vector, right: Vector, tol: Vector) -> bool:
    """Every dimension of `left` fits in `right` (Volcano's LessEqual with its 0.1-unit slack)."""
    return bool(np.all(left <= right + tol))


def exceeding(left: Vector, right: Vector, tol: Vector, dims: NDArray[np.bool_] | None = None) -> NDArray[np.bool_]:
    over = left > right + tol
    return over if dims is None else over & dims


def is_empty(vec: Vector, tol: Vector) -> bool:
    """Volcano's IsEmpty: nothing requested beyond the tolerance (pods are not a dimension here)."""
    return bool(np.all(vec <= tol))

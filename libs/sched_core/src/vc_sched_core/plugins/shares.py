"""Share arithmetic shared by drf, its hierarchical mode, proportion and capacity."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.resources import Vector


def dominant_share(allocated: Vector, total: Vector) -> float:
    """max_r allocated/total; a resource the cluster lacks counts 1 if used, else 0 (Volcano Share)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(total > 0, allocated / np.where(total > 0, total, 1), np.where(allocated > 0, 1.0, 0.0))
    return float(ratios.max()) if ratios.size else 0.0


class ShareOf:
    """`dominant_share(x, denominator)` for one fixed denominator, asked many times a session (every
    placement moves a job's and a queue's share). When the denominator is positive everywhere (the
    common case) the share is one division and a max; the values are exactly dominant_share's."""

    __slots__ = ("_plain", "denominator")

    def __init__(self, denominator: Vector) -> None:
        self.denominator = denominator
        self._plain = bool(denominator.size) and bool((denominator > 0).all())

    def __call__(self, numerator: Vector) -> float:
        if self._plain:
            return float((numerator / self.denominator).max())
        return dominant_share(numerator, self.denominator)

    def of_rows(self, numerators: NDArray[np.float64]) -> list[float]:
        """The share of each row (the same floats as calling this on each row)."""
        if self._plain:
            return list((numerators / self.denominator).max(axis=1).tolist())
        return [dominant_share(row, self.denominator) for row in numerators]

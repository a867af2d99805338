"""Share arithmetic shared by drf and its hierarchical mode."""

from __future__ import annotations

import numpy as np

from vc_scheduling.framework.resources import Vector


def dominant_share(allocated: Vector, total: Vector) -> float:
    """max_r allocated/total; a resource the cluster lacks counts 1 if used, else 0 (Volcano Share)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(total > 0, allocated / np.where(total > 0, total, 1), np.where(allocated > 0, 1.0, 0.0))
    return float(ratios.max()) if ratios.size else 0.0

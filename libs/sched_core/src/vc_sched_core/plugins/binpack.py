"""binpack: prefer nodes that are already full, to keep whole nodes free (Volcano binpack.go).

score = Σ_r w_r * (request_r + used_r) / allocatable_r / Σ w_r * 100 * binpack.weight, over the
resources the task requests that have a weight; 0 when any of them would overflow the node.
"""

from __future__ import annotations

from typing import ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.framework.nodes import NodeTable
from vc_sched_core.framework.resources import ResourceSpace
from vc_sched_core.framework.session import Session

NAME: Final = "binpack"
Rows = NDArray[np.intp]


def _number(value: object, default: float) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default


def resource_weights(args: PluginArgs) -> dict[str, float]:
    """binpack.cpu, binpack.memory and binpack.resources.<name> (negative means 1)."""
    weights = {"cpu": _number(args.get("binpack.cpu", 1), 1), "memory": _number(args.get("binpack.memory", 1), 1)}
    extra = str(args.get("binpack.resources", "") or "")
    for name in (n.strip() for n in extra.split(",") if n.strip()):
        weight = _number(args.get(f"binpack.resources.{name}", 1), 1)
        weights[name] = 1.0 if weight < 0 else weight
    return {name: (1.0 if w < 0 else w) for name, w in weights.items()}


def binpack_scores(
    nodes: NodeTable, rows: Rows, request: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    counted = (request > 0) & (weights > 0)
    if not counted.any():
        return np.zeros(len(rows))
    dims = np.flatnonzero(counted)
    alloc = nodes.allocatable[np.ix_(rows, dims)]
    used = nodes.used[np.ix_(rows, dims)] + request[dims]
    overflow = np.any(used > alloc, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(alloc > 0, used / np.where(alloc > 0, alloc, 1.0), 0.0)
    score = (fraction * weights[dims]).sum(axis=1) / weights[dims].sum() * 100.0
    return np.asarray(np.where(overflow, 0.0, score), dtype=np.float64)


class BinpackPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        args = dict(args or {})
        self.weight = _number(args.get("binpack.weight", 1), 1)
        self.named_weights = resource_weights(args)
        self.weights: NDArray[np.float64] = np.zeros(0)
        self.nodes: NodeTable | None = None

    def on_session_open(self, ssn: Session) -> None:
        self.nodes = ssn.nodes
        self.weights = _weights_vector(ssn.space, self.named_weights)
        if self.weight != 0:
            ssn.add_fn(ExtensionPoint.NODE_ORDER, NAME, self.node_order, node_local=True)

    def on_session_close(self, ssn: Session) -> None:
        self.nodes = None

    def node_order(self, task: TaskInfo, rows: Rows) -> NDArray[np.float64]:
        if self.nodes is None:
            return np.zeros(len(rows))
        return binpack_scores(self.nodes, rows, task.resreq, self.weights) * self.weight


def _weights_vector(space: ResourceSpace, named: dict[str, float]) -> NDArray[np.float64]:
    return space.vector(named)

"""Nodes of a session as one node x resource matrix per quantity (idle, used, releasing, pipelined).

Every node-wide question (which nodes fit this request?) is one NumPy expression over the matrix;
adding or removing a task touches one row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.resources import ResourceSpace, Vector
from vc_sched_core.snapshot.cluster import NodeObj


@dataclass(slots=True, eq=False)
class NodeInfo:
    name: str
    row: int
    obj: NodeObj
    tasks: dict[str, TaskInfo] = field(default_factory=dict)


class NodeTable:
    """Resource state of all nodes; row `i` belongs to `nodes[i]`."""

    def __init__(self, space: ResourceSpace, nodes: Sequence[NodeObj]) -> None:
        self.space = space
        self.nodes = [NodeInfo(n.name, i, n) for i, n in enumerate(nodes)]
        self.by_name = {n.name: n for n in self.nodes}
        shape = (len(self.nodes), space.size)
        self.allocatable = np.zeros(shape, dtype=np.float64)
        for node in self.nodes:
            self.allocatable[node.row] = space.vector(node.obj.allocatable)
        # Fixed for the session: scoring multiplies by the inverse instead of dividing per call.
        self.offered = self.allocatable > 0
        self.inverse_allocatable = np.where(self.offered, 1.0 / np.where(self.offered, self.allocatable, 1.0), 0.0)
        # The five accounts as one stack (views below), so a placement updates a row of each in one step.
        self._accounts = np.zeros((len(_ACCOUNTS), *shape), dtype=np.float64)
        self.releasing, self.idle, self.used, self.future_idle, self.pipelined = self._accounts
        self.idle[:] = self.allocatable
        self.future_idle[:] = self.allocatable
        no_limit = float("inf")
        self.max_pods = np.array([no_limit if n.max_pods is None else n.max_pods for n in nodes], dtype=np.float64)
        self.pod_count = np.zeros(len(self.nodes), dtype=np.float64)
        # Every row whose state changed, in order: what per-class node answers recompute (equivalence.py).
        self.changes: list[int] = []

    def __len__(self) -> int:
        return len(self.nodes)

    def total_allocatable(self) -> Vector:
        return np.asarray(self.allocatable.sum(axis=0), dtype=np.float64)

    def add_task(self, node: NodeInfo, task: TaskInfo) -> None:
        self._account(node.row, task.status, task.resreq, sign=1.0)
        node.tasks[task.uid] = task
        self.pod_count[node.row] += 1
        self.changes.append(node.row)

    def add_tasks(self, placed: Sequence[tuple[NodeInfo, TaskInfo]]) -> None:
        """`add_task` for many tasks at once (a session's opening: every pod already on a node), as a
        few vectorised updates instead of one row update per task."""
        if not placed:
            return
        for node, task in placed:
            node.tasks[task.uid] = task
        rows = np.fromiter((node.row for node, _ in placed), dtype=np.intp, count=len(placed))
        self.changes.extend(rows.tolist())
        reqs = np.array([task.resreq for _, task in placed], dtype=np.float64).reshape(len(placed), self.space.size)
        statuses = [task.status for _, task in placed]
        releasing = np.fromiter((s == TaskStatus.RELEASING for s in statuses), dtype=bool, count=len(placed))
        pipelined = np.fromiter((s == TaskStatus.PIPELINED for s in statuses), dtype=bool, count=len(placed))
        other = ~(releasing | pipelined)
        np.add.at(self.pod_count, rows, 1.0)
        for mask, idle, used, future, releasing_, pipelined_ in (
            (other, -1, 1, -1, 0, 0),
            (releasing, -1, 1, 0, 1, 0),  # idle down, releasing up by as much: future idle unchanged
            (pipelined, 0, 0, -1, 0, 1),
        ):
            if not mask.any():
                continue
            at, req = rows[mask], reqs[mask]
            for matrix, sign in (
                (self.idle, idle),
                (self.used, used),
                (self.future_idle, future),
                (self.releasing, releasing_),
                (self.pipelined, pipelined_),
            ):
                if sign > 0:
                    np.add.at(matrix, at, req)
                elif sign < 0:
                    np.subtract.at(matrix, at, req)

    def remove_task(self, node: NodeInfo, task: TaskInfo) -> None:
        if node.tasks.pop(task.uid, None) is None:
            return
        self._account(node.row, task.status, task.resreq, sign=-1.0)
        self.pod_count[node.row] -= 1
        self.changes.append(node.row)

    def _account(self, row: int, status: TaskStatus, req: Vector, *, sign: float) -> None:
        first, last, adding, removing = _EFFECTS[status == TaskStatus.RELEASING, status == TaskStatus.PIPELINED]
        # coefficient * req is exactly req or -req, so each account moves by the same floats as x += req
        # or x -= req would (an account the task does not move is left out altogether).
        self._accounts[first:last, row] += (adding if sign > 0 else removing) * req

    # -- rows, for the state carried between sessions (carried.py) -----------------------------------

    def replace_node(self, row: int, obj: NodeObj) -> None:
        """A changed node object at the same row: its capacity as a fresh table computes it (the row's
        accounting is redone by the caller)."""
        self.nodes[row].obj = obj
        self.allocatable[row] = self.space.vector(obj.allocatable)
        self.offered[row] = self.allocatable[row] > 0
        offered = self.offered[row]
        self.inverse_allocatable[row] = np.where(offered, 1.0 / np.where(offered, self.allocatable[row], 1.0), 0.0)
        self.max_pods[row] = float("inf") if obj.max_pods is None else obj.max_pods

    def clear_row(self, row: int) -> None:
        """The row as a fresh table starts it: nothing placed."""
        self._accounts[:, row] = 0.0
        self.idle[row] = self.allocatable[row]
        self.future_idle[row] = self.allocatable[row]
        self.pod_count[row] = 0.0
        self.nodes[row].tasks = {}

    def account_row(self, row: int) -> NDArray[np.float64]:
        """A copy of the row's five accounts (set_account_row puts it back)."""
        return self._accounts[:, row].copy()

    def set_account_row(self, row: int, accounts: NDArray[np.float64], pods: float) -> None:
        self._accounts[:, row] = accounts
        self.pod_count[row] = pods

    def fits_idle(self, rows: NDArray[np.intp], req: Vector) -> NDArray[np.bool_]:
        return _fits(self.idle[rows], req, self.space.tolerance)

    def fits_future_idle(self, rows: NDArray[np.intp] | slice, req: Vector) -> NDArray[np.bool_]:
        return _fits(self.future_idle[rows], req, self.space.tolerance)

    def free_pods(self, rows: NDArray[np.intp] | slice) -> NDArray[np.float64]:
        return np.asarray(self.max_pods[rows] - self.pod_count[rows], dtype=np.float64)

    def future_free_pods(self, node: NodeInfo) -> float:
        """Volcano's FutureIdle on `pods` (a resource there): the node's limit less every pod on it,
        releasing ones given back; a pipelined one keeps its place."""
        free = float(self.max_pods[node.row] - self.pod_count[node.row])
        if np.isinf(free):
            return free
        return free + sum(1 for t in node.tasks.values() if t.status == TaskStatus.RELEASING)


# In this order each kind of task moves a contiguous run of accounts (one slice, one update).
_ACCOUNTS = ("releasing", "idle", "used", "future_idle", "pipelined")


def _effect(**moves: float) -> tuple[int, int, NDArray[np.float64], NDArray[np.float64]]:
    """The accounts a task moves (a slice of _ACCOUNTS) and by how much per unit of its request,
    when it is added and when it is removed."""
    accounts = [i for i, name in enumerate(_ACCOUNTS) if name in moves]
    first, last = accounts[0], accounts[-1] + 1
    assert accounts == list(range(first, last)), moves
    adding = np.array([[moves[_ACCOUNTS[i]]] for i in accounts], dtype=np.float64)
    return first, last, adding, -adding


# By (releasing, pipelined): a releasing task still uses its node (idle down, releasing up by as much:
# future idle unchanged); a pipelined one only holds future idle; any other placed task uses the node.
_EFFECTS = {
    (False, False): _effect(idle=-1.0, used=1.0, future_idle=-1.0),
    (True, False): _effect(releasing=1.0, idle=-1.0, used=1.0),
    (False, True): _effect(future_idle=-1.0, pipelined=1.0),
}


def _fits(avail: NDArray[np.float64], req: Vector, tol: Vector) -> NDArray[np.bool_]:
    """Rows of `avail` that hold `req` on every requested dimension (zero requests always fit)."""
    need = req > 0
    if not need.any():
        return np.ones(avail.shape[0], dtype=bool)
    return np.asarray(np.all(avail[:, need] >= req[need] - tol[need], axis=1), dtype=bool)

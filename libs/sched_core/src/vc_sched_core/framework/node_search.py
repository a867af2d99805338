"""Feasible-node search and best-node choice (Volcano PredicateHelper, PrioritizeNodes, SelectBestNode).

Vectorised: the resource fit of a task is one comparison over the whole node matrix, predicate plugins
answer for arrays of rows, and sampling keeps Volcano's observable behaviour: take the first N
feasible nodes in round-robin order from where the previous search stopped.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.fit_errors import FitErrors, insufficient
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.framework.nodes import NodeInfo
from vc_sched_core.framework.session import Session

MIN_FEASIBLE_NODES = 100
MIN_PERCENTAGE_OF_NODES = 5
Rows = NDArray[np.intp]


@dataclass(slots=True)
class SearchResult:
    rows: Rows
    fit_errors: FitErrors | None = None


def num_feasible_nodes_to_find(
    total: int,
    *,
    minimum_nodes: int = MIN_FEASIBLE_NODES,
    minimum_percentage: int = MIN_PERCENTAGE_OF_NODES,
    percentage: int = 0,
) -> int:
    """Volcano CalculateNumOfFeasibleNodesToFind: adaptive `50 - n/125` percent, floored, at least 100."""
    if total <= minimum_nodes or percentage >= 100:
        return total
    pct = percentage if percentage > 0 else max(50 - total // 125, minimum_percentage)
    return max(total * pct // 100, minimum_nodes)


def find_feasible_nodes(ssn: Session, task: TaskInfo, *, sample: bool = True) -> SearchResult:
    """Nodes whose future idle holds the task and that pass every predicate plugin.

    Like Volcano, the search starts where the previous one stopped and ends once enough feasible nodes
    are found. The answers per node are the task's class's (equivalence.py): shared by its siblings,
    and recomputed only for nodes that changed since.
    """
    started = time.perf_counter()
    try:
        return _find_feasible_nodes(ssn, task, sample)
    finally:  # Volcano's scheduling_stage_duration{stage="Predicate"}: one task's PredicateNodes
        ssn.stage_durations["Predicate"].append(time.perf_counter() - started)


def _find_feasible_nodes(ssn: Session, task: TaskInfo, sample: bool) -> SearchResult:
    total = len(ssn.nodes)
    wanted = num_feasible_nodes_to_find(total) if sample else total
    start = ssn.next_start_row if sample else 0
    feasible = ssn.equivalence.window(task, start, wanted) if total else np.zeros(0, dtype=np.intp)
    if len(feasible) == 0:
        return SearchResult(np.zeros(0, dtype=np.intp), _fit_errors_everywhere(ssn, task))
    if sample and len(feasible) == wanted and wanted < total:
        ssn.next_start_row = (int(feasible[-1]) + 1) % total
    return SearchResult(feasible)


def _fit_errors_everywhere(ssn: Session, task: TaskInfo) -> FitErrors:
    """The failure path: why each node refused, over all nodes (Volcano scanned them all too)."""
    fits = ssn.nodes.fits_future_idle(slice(None), task.resreq)
    outcome = ssn.predicate(task, np.flatnonzero(fits))
    return _fit_errors(ssn, task, fits, outcome.reasons)


def _fit_errors(ssn: Session, task: TaskInfo, fits: NDArray[np.bool_], reasons: Counter[str]) -> FitErrors:
    nodes = ssn.nodes
    errors = FitErrors(nodes=len(nodes), reasons=Counter(reasons))
    short_rows = np.flatnonzero(~fits)
    if len(short_rows) == 0:
        return errors
    tol, req = ssn.space.tolerance, task.resreq
    lacking = nodes.future_idle[short_rows] < req - tol
    eligible = ssn.predicate(task, np.arange(len(nodes))).rows  # nodes passing everything but resources
    for dim, name in enumerate(ssn.space.names):
        count = int((lacking[:, dim] & (req[dim] > 0)).sum())
        if count == 0:
            continue
        errors.reasons[insufficient(name)] += count
        best = float(nodes.future_idle[eligible, dim].max()) if len(eligible) else 0.0
        errors.shortfalls[name] = (float(req[dim]), max(best, 0.0))
    return errors


def select_best_node(ssn: Session, task: TaskInfo, rows: Rows) -> NodeInfo:
    """Candidates fitting idle first, then those fitting only future idle; highest score wins.

    Ties go to the first candidate in search order (Volcano picks at random among equals).
    """
    started = time.perf_counter()
    try:
        return _select_best_node(ssn, task, rows)
    finally:  # Volcano's scheduling_stage_duration{stage="Scoring"}: one task's PrioritizeNodes
        ssn.stage_durations["Scoring"].append(time.perf_counter() - started)


def _select_best_node(ssn: Session, task: TaskInfo, rows: Rows) -> NodeInfo:
    state = ssn.equivalence.ensure_known(task, rows)
    idle_ok = state.fits_idle[rows]
    for group in (rows[idle_ok], rows[~idle_ok]):
        if len(group) == 0:
            continue
        if len(group) == 1:
            return ssn.nodes.nodes[int(group[0])]
        scores = ssn.equivalence.scores(task, group, state)
        return ssn.nodes.nodes[int(group[int(np.argmax(scores))])]
    raise ValueError("select_best_node needs at least one candidate")


def fits_idle(ssn: Session, task: TaskInfo, node: NodeInfo) -> bool:
    """Whether the node's idle (not only its future idle) holds the task now: allocate, else pipeline."""
    state = ssn.equivalence.of(task)
    if not state.known[node.row]:
        state = ssn.equivalence.ensure_known(task, np.array([node.row]))
    return bool(state.fits_idle[node.row])


def sort_nodes_by_score(ssn: Session, task: TaskInfo, rows: Rows) -> list[NodeInfo]:
    """Highest score first, stable (Volcano SortNodes), for preempt."""
    if len(rows) == 0:
        return []
    scores = ssn.node_scores(task, rows)
    order = np.argsort(-scores, kind="stable")
    return [ssn.nodes.nodes[int(rows[i])] for i in order]

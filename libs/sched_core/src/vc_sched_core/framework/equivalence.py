"""Node answers per equivalence class: the tasks of one template with one request share them.

A class is a task's `class_key` (what its predicates read: node selector, affinity, tolerations) plus
its request vector. Per class the session keeps, over the node rows, whether each node fits the
request (future idle, idle) and passes every node-local predicate, and the sum of the node-local
scores. A node's answers change only when that node's own state does (a task placed on it or taken
off), and the node table logs every such row; so after a placement only that row is stale.

Everything is computed lazily and stale rows in bulk: the first search of a class computes the rows
it scans, later searches reuse them, and the rows changed since are recomputed all at once the first
time a search or a choice looks at any of them. A gang's tasks searching successive windows of the
cluster therefore recompute once per lap, not once per task, and a class with one task costs what a
plain search costs.

"Node-local" is a plugin's promise when it registers a predicate or a score
(`Session.add_fn(..., node_local=True)`): its answer for a node depends only on the task's class and
on that node's own state. Predicates and scores that look across nodes (inter-pod affinity, topology
spread, scores normalised over the candidates) register without it and are evaluated per task over
the candidates, in their place in the tier order, exactly as before. Such a predicate may say which
tasks it concerns (a `concerns(task) -> bool` attribute): for any other task it would pass every
node, so the search leaves it out and the task keeps the cached path.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from vc_sched_core.framework.model import TaskInfo
    from vc_sched_core.framework.session import Session

Rows = NDArray[np.intp]
Fn = Callable[..., Any]
# More stale rows than this are refreshed at once rather than checked one by one against a search.
MAX_STALE_CHECKED: Final = 32


def class_of(task: TaskInfo) -> tuple[bytes, bytes]:
    key = task.node_class
    if key is None:
        key = task.node_class = (task.class_key, task.resreq.tobytes())
    return key


class ClassNodes:
    """One class's answers over every node row, with what is known and what went stale."""

    __slots__ = (
        "computed",
        "feasible",
        "fits_idle",
        "known",
        "never",
        "order",
        "position",
        "rescore",
        "scored",
        "scores",
        "stale",
    )

    def __init__(self, rows: int, position: int) -> None:
        self.feasible = np.zeros(rows, dtype=bool)  # fits future idle and passes the node-local predicates
        self.fits_idle = np.zeros(rows, dtype=bool)
        self.known = np.zeros(rows, dtype=bool)  # the two above are current for the row
        self.computed = np.zeros(rows, dtype=bool)  # the row was computed at least once
        self.never = rows  # rows never computed (the fast window search needs none)
        self.scores = np.zeros(rows, dtype=np.float64)  # sum of the node-local score prefix
        self.scored = np.zeros(rows, dtype=bool)
        self.stale: set[int] = set()  # rows computed once, changed since
        self.rescore: set[int] = set()  # rows scored once, changed since
        self.order: Rows | None = None  # flatnonzero(feasible) while every row is known
        self.position = position  # how much of the node table's change log has been applied

    def catch_up(self, log: list[int]) -> None:
        if self.position == len(log):
            return
        changed = log[self.position :]
        self.position = len(log)
        self.known[changed] = False
        self.stale.update(changed)
        self.scored[changed] = False
        self.rescore.update(changed)


class EquivalenceCache:
    """The session's ClassNodes by class, and the searches over them."""

    def __init__(self, ssn: Session) -> None:
        # The session holds this cache, so it holds the session weakly: no reference cycle, and a
        # session's objects are freed when it ends rather than by the cyclic collector (at the seeds'
        # scale a full collection that found a million of them took seconds, and they held memory until).
        self._session = weakref.ref(ssn)
        self._nodes = ssn.nodes
        self._classes: dict[tuple[bytes, bytes], ClassNodes] = {}
        self._predicates: tuple[list[Fn], list[Fn]] | None = None
        self._scores: tuple[list[Fn], list[Fn]] | None = None

    def _ssn(self) -> Session:
        ssn = self._session()
        assert ssn is not None, "the session ended"
        return ssn

    # -- what the plugins registered ----------------------------------------------------------------

    def predicates(self) -> tuple[list[Fn], list[Fn]]:
        """(node-local, other) predicate functions; a conjunction, so their order does not matter."""
        if self._predicates is None:
            self._predicates = self._ssn().predicates_by_locality()
        return self._predicates

    def score_fns(self) -> tuple[list[Fn], list[Fn]]:
        """The node-local prefix of the score functions in walking order (its sum is cached), then the rest,
        added per call in order: the floating-point sum is the one a plain walk computes."""
        if self._scores is None:
            self._scores = self._ssn().scores_by_locality()
        return self._scores

    # -- per class ---------------------------------------------------------------------------------

    def of(self, task: TaskInfo) -> ClassNodes:
        key = class_of(task)
        log = self._nodes.changes
        state = self._classes.get(key)
        if state is None:
            state = self._classes[key] = ClassNodes(len(self._nodes), len(log))
        else:
            state.catch_up(log)
        return state

    def window(self, task: TaskInfo, start: int, wanted: int) -> Rows:
        """The first `wanted` feasible rows in round-robin order from `start` (all of them when fewer):
        the rows a plain chunked scan from `start` would return."""
        state = self.of(task)
        other = self.predicates()[1]
        if other:
            other = [fn for fn in other if _concerns(fn, task)]
        if other:
            return self._window_with_other_predicates(state, task, start, wanted, other)
        if state.never:
            self._refresh(state, task)
            return self._scan(state, task, start, wanted)
        while True:
            rows = _first_from(self._order(state), start, wanted)
            if not state.stale or not self._touches_stale(state, rows, start, wanted):
                return rows
            self._refresh(state, task)

    def ensure_known(self, task: TaskInfo, rows: Rows) -> ClassNodes:
        """The class with `rows`' fit answers current."""
        state = self.of(task)
        if not state.known[rows].all():
            self._refresh(state, task)
            unknown = rows[~state.known[rows]]
            if len(unknown):
                self._compute(state, task, unknown)
        return state

    def scores(self, task: TaskInfo, rows: Rows, state: ClassNodes | None = None) -> NDArray[np.float64]:
        """Every score for `rows` (a fresh array), the node-local prefix from the class's cache."""
        state = state or self.of(task)
        local, rest = self.score_fns()
        if local and not state.scored[rows].all():
            missing = rows[~state.scored[rows]]
            if state.rescore:
                missing = np.union1d(missing, np.fromiter(state.rescore, dtype=np.intp, count=len(state.rescore)))
                state.rescore.clear()
            state.scores[missing] = _sum(local, task, missing)
            state.scored[missing] = True
        scores = state.scores[rows] if local else np.zeros(len(rows), dtype=np.float64)
        for fn in rest:
            scores += fn(task, rows)
        return scores

    # -- internals ---------------------------------------------------------------------------------

    def _compute(self, state: ClassNodes, task: TaskInfo, rows: Rows) -> None:
        """Fit answers for `rows` (unique), from the node table and the node-local predicates."""
        nodes = self._nodes
        state.fits_idle[rows] = nodes.fits_idle(rows, task.resreq)
        passed = nodes.fits_future_idle(rows, task.resreq)
        for fn in self.predicates()[0]:
            candidates = np.flatnonzero(passed)
            if len(candidates) == 0:
                break
            failing = np.zeros(len(candidates), dtype=bool)
            for failure in fn(task, rows[candidates]):
                failing |= failure.mask
            passed[candidates[failing]] = False
        before = state.feasible[rows]
        state.feasible[rows] = passed
        if state.order is not None and not np.array_equal(before, passed):
            state.order = None
        state.never -= int((~state.computed[rows]).sum())
        state.computed[rows] = True
        state.known[rows] = True
        if state.stale:  # a chunked search refreshed these itself
            state.stale.difference_update(rows.tolist())

    def _refresh(self, state: ClassNodes, task: TaskInfo) -> None:
        """Recompute every stale row at once."""
        if not state.stale:
            return
        rows = np.fromiter(sorted(state.stale), dtype=np.intp, count=len(state.stale))
        state.stale.clear()
        self._compute(state, task, rows)

    def _order(self, state: ClassNodes) -> Rows:
        if state.order is None:
            state.order = np.flatnonzero(state.feasible)
        return state.order

    def _touches_stale(self, state: ClassNodes, rows: Rows, start: int, wanted: int) -> bool:
        """Whether a stale row lies where the search looked: from `start` to the last row it took,
        round robin (everywhere when it found fewer than it wanted)."""
        if len(rows) < wanted or len(state.stale) > MAX_STALE_CHECKED:
            return True
        total = len(state.known)
        span = (int(rows[-1]) - start) % total
        return any((row - start) % total <= span for row in state.stale)

    def _scan(self, state: ClassNodes, task: TaskInfo, start: int, wanted: int) -> Rows:
        """The chunked search while some rows were never computed: compute what each chunk lacks."""
        total = len(state.known)
        chunk = max(2 * wanted, 512)
        found: list[Rows] = []
        count = scanned = 0
        while scanned < total and count < wanted:
            rows = (start + scanned + np.arange(min(chunk, total - scanned))) % total
            scanned += len(rows)
            unknown = rows[~state.known[rows]]
            if len(unknown):
                self._compute(state, task, unknown)
            passed = rows[state.feasible[rows]]
            found.append(passed)
            count += len(passed)
        if not found:
            return np.zeros(0, dtype=np.intp)
        return np.concatenate(found)[:wanted]

    def _window_with_other_predicates(
        self, state: ClassNodes, task: TaskInfo, start: int, wanted: int, other: Sequence[Fn]
    ) -> Rows:
        """The first `wanted` rows in round-robin order from `start` that pass every predicate: the
        cluster in chunks from `start`, each chunk's missing or stale node-local answers computed
        there, then the other predicates over the chunk's feasible rows until enough pass. A class
        searched once (a gang with its own anti-affinity selector is a class of its own) computes only
        the chunks it looks at, and the other predicates are asked about as few nodes as a plain search
        asks."""
        total = len(state.known)
        chunk = max(2 * wanted, 512)
        found: list[Rows] = []
        count = scanned = 0
        while scanned < total and count < wanted:
            rows = (start + scanned + np.arange(min(chunk, total - scanned))) % total
            scanned += len(rows)
            unknown = rows[~state.known[rows]]
            if len(unknown) and state.stale:
                # Every stale row at once, as the plain search does: a recompute's cost is mostly fixed,
                # and the rows placed on since lie behind the next searches' start until a lap later.
                self._refresh(state, task)
                unknown = rows[~state.known[rows]]
            if len(unknown):
                self._compute(state, task, unknown)
            candidates = rows[state.feasible[rows]]
            for fn in other:
                if len(candidates) == 0:
                    break
                failing = np.zeros(len(candidates), dtype=bool)
                for failure in fn(task, candidates):
                    failing |= failure.mask
                candidates = candidates[~failing]
            found.append(candidates)
            count += len(candidates)
        if not found:
            return np.zeros(0, dtype=np.intp)
        return np.concatenate(found)[:wanted]


def _concerns(fn: Fn, task: TaskInfo) -> bool:
    concerns = getattr(fn, "concerns", None)
    return concerns is None or bool(concerns(task))


def _first_from(order: Rows, start: int, wanted: int) -> Rows:
    """The first `wanted` entries of a sorted row array in round-robin order from `start`."""
    count = len(order)
    if count == 0:
        return order
    pos = int(np.searchsorted(order, start))
    if count - pos >= wanted:
        return order[pos : pos + wanted]
    return np.concatenate((order[pos:], order[: min(pos, wanted - (count - pos))]))


def _sum(fns: Sequence[Fn], task: TaskInfo, rows: Rows) -> NDArray[np.float64]:
    scores = np.zeros(len(rows), dtype=np.float64)
    for fn in fns:
        scores += fn(task, rows)
    return scores

"""The pods on the session's nodes as an entry table, kept in step with the node table, and per-row
counts of the pods a test selects (what inter-pod affinity and topology spread count).

The node table logs every row whose pods change (`NodeTable.changes`); the table re-reads only those
rows. Entries are append-only (a pod that moves or goes is marked gone and a new entry appended), and
every change of an entry's state is logged, so each counter catches up by applying the log since it
last looked: per placement the work is the changed entries, not the cluster.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
from typing import Final

import numpy as np
from numpy.typing import NDArray

from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeTable

GONE: Final = 0
COUNTED: Final = 1
RELEASING: Final = 2  # being deleted: counted by inter-pod affinity, not by topology spread (Kubernetes)

# Entry tests take the table and a range of entries and answer for each one.
EntryTest = Callable[["PlacedPods", int, int], NDArray[np.bool_]]


def _state(task: TaskInfo) -> int:
    """A pod this session evicted is gone for the predicates at once (Volcano's predicates plugin
    removes it from the node on the deallocate event), one already being deleted is releasing."""
    if task.status != TaskStatus.RELEASING:
        return COUNTED
    return RELEASING if task.pod.deleting else GONE


class PlacedPods:
    def __init__(self, nodes: NodeTable) -> None:
        self.nodes = nodes
        self.rows: list[int] = []
        self.namespaces: list[str] = []
        self.labels: list[Mapping[str, str]] = []
        self.tasks: list[TaskInfo] = []
        self.states: list[int] = []
        self._entry_of: dict[str, int] = {}  # task uid -> its live entry
        self._on_row: dict[int, set[int]] = {}
        self.log_entries: list[int] = []
        self.log_before: list[int] = []
        self.log_after: list[int] = []
        # (label, value) -> entries carrying it, ascending: a selector with matchLabels looks only there.
        self.by_label: dict[tuple[str, str], list[int]] = {}
        for node in nodes.nodes:
            for task in node.tasks.values():
                self._add(node.row, task)
        self._position = len(nodes.changes)

    def __len__(self) -> int:
        return len(self.rows)

    def sync(self) -> None:
        changes = self.nodes.changes
        if self._position == len(changes):
            return
        rows = set(changes[self._position :])
        self._position = len(changes)
        for row in rows:
            self._sync_row(row)

    def _sync_row(self, row: int) -> None:
        node = self.nodes.nodes[row]
        seen: set[int] = set()
        for uid, task in node.tasks.items():
            entry = self._entry_of.get(uid)
            if entry is not None and self.rows[entry] == row:
                self._set(entry, _state(task))
            else:
                if entry is not None:
                    self._set(entry, GONE)
                entry = self._add(row, task)
            seen.add(entry)
        for entry in self._on_row.get(row, set()) - seen:
            self._set(entry, GONE)
            uid = self.tasks[entry].uid
            if self._entry_of.get(uid) == entry:
                del self._entry_of[uid]
        self._on_row[row] = seen

    def _add(self, row: int, task: TaskInfo) -> int:
        entry = len(self.rows)
        self.rows.append(row)
        self.namespaces.append(task.namespace)
        self.labels.append(task.pod.labels)
        for pair in task.pod.labels.items():
            self.by_label.setdefault(pair, []).append(entry)
        self.tasks.append(task)
        self.states.append(GONE)
        self._entry_of[task.uid] = entry
        self._on_row.setdefault(row, set()).add(entry)
        self._set(entry, _state(task))
        return entry

    def candidates(self, match_labels: Mapping[str, str], start: int, stop: int) -> list[int] | None:
        """The entries in [start, stop) that carry every pair of `match_labels` could match a selector
        with them: the shortest of their lists, cut to the range (None: no pairs, every entry could)."""
        if not match_labels:
            return None
        shortest: list[int] | None = None
        for pair in match_labels.items():
            entries = self.by_label.get(pair)
            if entries is None:
                return []
            if shortest is None or len(entries) < len(shortest):
                shortest = entries
        assert shortest is not None
        return shortest[bisect_left(shortest, start) : bisect_left(shortest, stop)]

    def _set(self, entry: int, state: int) -> None:
        before = self.states[entry]
        if before == state:
            return
        self.states[entry] = state
        self.log_entries.append(entry)
        self.log_before.append(before)
        self.log_after.append(state)


# Weight of each state in a count: inter-pod affinity counts releasing pods, topology spread does not.
_WEIGHTS: Final = {False: np.array([0, 1, 1], dtype=np.int64), True: np.array([0, 1, 0], dtype=np.int64)}


class RowCounter:
    """Per node row, how many placed pods pass `test`; `version` changes whenever the counts may."""

    def __init__(self, pods: PlacedPods, test: EntryTest, *, spread: bool = False) -> None:
        self._pods = pods
        self._test = test
        self._weights = _WEIGHTS[spread]
        self._mask = np.zeros(0, dtype=bool)
        self._log_position = 0
        self.counts = np.zeros(len(pods.nodes), dtype=np.int64)
        self.version = 0
        self._fresh = True
        # Every change of the counts after the first look, as (rows, amounts): sums over domains
        # follow it (DomainTotals) instead of summing the cluster again.
        self.changes: list[tuple[NDArray[np.intp], NDArray[np.int64]]] = []

    def _start(self, pods: PlacedPods) -> None:
        """The first look: count the selected entries as they are now, instead of replaying the whole
        log (a counter made late in a session would otherwise walk every placement before it)."""
        self._fresh = False
        self._mask = self._test(pods, 0, len(pods))
        self._log_position = len(pods.log_entries)
        for entry in np.flatnonzero(self._mask).tolist():
            weight = int(self._weights[pods.states[entry]])
            if weight:
                self.counts[pods.rows[entry]] += weight
        self.version += 1

    def current(self) -> NDArray[np.int64]:
        pods = self._pods
        pods.sync()
        if self._fresh:
            self._start(pods)
        if len(self._mask) < len(pods):
            self._mask = np.concatenate((self._mask, self._test(pods, len(self._mask), len(pods))))
        end = len(pods.log_entries)
        if self._log_position < end:
            entries = np.asarray(pods.log_entries[self._log_position : end], dtype=np.intp)
            before = np.asarray(pods.log_before[self._log_position : end], dtype=np.intp)
            after = np.asarray(pods.log_after[self._log_position : end], dtype=np.intp)
            self._log_position = end
            delta = (self._weights[after] - self._weights[before]) * self._mask[entries]
            moved = delta != 0
            if moved.any():
                rows = np.asarray([pods.rows[e] for e in entries[moved].tolist()], dtype=np.intp)
                np.add.at(self.counts, rows, delta[moved])
                self.changes.append((rows, delta[moved]))
                self.version += 1
        return self.counts


class TopologyDomains:
    """Per topology key, each node row's domain (its value of the label) as an id; -1: no such label."""

    def __init__(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        self._ids: dict[str, tuple[NDArray[np.intp], int]] = {}
        self._unique: dict[str, bool] = {}

    def of(self, key: str) -> tuple[NDArray[np.intp], int]:
        """(ids per row, number of domains)."""
        hit = self._ids.get(key)
        if hit is None:
            values = [node.obj.labels.get(key) for node in self._nodes.nodes]
            names = sorted({v for v in values if v is not None})
            index = {name: i for i, name in enumerate(names)}
            ids = np.fromiter(
                (index.get(v, -1) if v is not None else -1 for v in values), dtype=np.intp, count=len(values)
            )
            hit = self._ids[key] = (ids, len(names))
        return hit

    def one_per_node(self, key: str) -> bool:
        """Whether every labelled row is a domain of its own (as with kubernetes.io/hostname)."""
        ids, size = self.of(key)
        hit = self._unique.get(key)
        if hit is None:
            hit = self._unique[key] = size == int((ids >= 0).sum())
        return hit

    def totals(
        self, key: str, per_row: NDArray[np.int64], eligible: NDArray[np.bool_] | None = None
    ) -> NDArray[np.int64]:
        """Per domain, the sum of `per_row` over its (eligible) rows."""
        ids, size = self.of(key)
        keep = ids >= 0 if eligible is None else (ids >= 0) & eligible
        return np.bincount(ids[keep], weights=per_row[keep], minlength=size).astype(np.int64)

    def present(self, key: str, eligible: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Per domain, whether an eligible row lies in it."""
        ids, size = self.of(key)
        return np.bincount(ids[(ids >= 0) & eligible], minlength=size) > 0


class DomainTotals:
    """A counter's counts summed per domain of one topology key over some rows, kept up to date from
    the counter's changes (one sum over the cluster at first, then only the rows that changed)."""

    def __init__(
        self, domains: TopologyDomains, key: str, counter: RowCounter, eligible: NDArray[np.bool_] | None
    ) -> None:
        self._counter = counter
        self._ids, _ = domains.of(key)
        self._keep = self._ids >= 0 if eligible is None else (self._ids >= 0) & eligible
        counts = counter.current()
        self.totals = domains.totals(key, counts, eligible)
        self._position = len(counter.changes)

    def current(self) -> NDArray[np.int64]:
        counter = self._counter
        counter.current()
        for rows, amounts in counter.changes[self._position :]:
            keep = self._keep[rows]
            if keep.any():
                np.add.at(self.totals, self._ids[rows[keep]], amounts[keep])
        self._position = len(counter.changes)
        return self.totals

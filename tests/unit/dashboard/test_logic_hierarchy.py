"""A parent queue's row counts the PodGroups of every queue below it: `root` holds what its children run."""

from __future__ import annotations

from tests.unit.dashboard.dashboard_builders import queue
from vc_dashboard.logic.hierarchy import GroupCounts, children_by_parent, subtree_counts
from vc_dashboard.logic.quota import queue_row
from vc_proto.scheduling import Queue


def _counted(name: str, parent: str | None, pending: int, running: int) -> Queue:
    spec = {"weight": 1, **({"parent": parent} if parent else {})}
    return queue(name, spec=spec, status={"state": "Open", "pending": pending, "inqueue": 1, "running": running})


def test_root_sums_every_queue_below_it() -> None:
    root = queue("root", status={"state": "Open", "allocated": {"cpu": "117"}})  # no job is submitted to it
    team = _counted("team", "root", pending=1, running=2)
    research = _counted("research", "team", pending=3, running=4)
    loose = _counted("default", None, pending=0, running=5)  # names no parent: under root
    totals = subtree_counts([root, team, research, loose])
    assert totals["root"] == GroupCounts(pending=4, inqueue=3, running=11, completed=0)
    assert totals["team"] == GroupCounts(pending=4, inqueue=2, running=6, completed=0)
    assert totals["research"] == GroupCounts(pending=3, inqueue=1, running=4, completed=0)
    row = queue_row(root, counts=totals["root"])
    assert (row.pending, row.inqueue, row.running) == (4, 3, 11)


def test_a_cycle_of_parents_is_counted_once_and_ends() -> None:
    a, b = _counted("a", "b", pending=1, running=0), _counted("b", "a", pending=2, running=0)
    totals = subtree_counts([a, b])
    assert {totals["a"].pending, totals["b"].pending} == {3, 2}  # one walk stops where it began
    assert children_by_parent([a, b]) == {"b": ["a"], "a": ["b"]}

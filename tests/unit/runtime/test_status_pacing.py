"""The status pacing every writer shares: a held change settles from when it was first held, writes of a
key are spaced, and a flush (a write, or the change going away) makes the next change settle afresh."""

from __future__ import annotations

import pytest

from vc_runtime.status_pacing import Pacing, StatusHolds

PACING = Pacing(every_s=3.0, settle_s=1.0)


@pytest.mark.parametrize(
    ("held_since", "written", "settle_s", "due"),
    [
        pytest.param(10.0, None, None, 11.0, id="never-written: the settle alone"),
        pytest.param(10.0, 9.5, None, 12.5, id="written just before: spaced from the write"),
        pytest.param(10.0, 2.0, None, 11.0, id="written long ago: the settle alone"),
        pytest.param(10.0, 9.5, 10.0, 20.0, id="a longer settle of the caller's overrides the usual one"),
    ],
)
def test_a_change_is_due_once_settled_and_spaced_from_the_last_write(
    held_since: float, written: float | None, settle_s: float | None, due: float
) -> None:
    assert PACING.due_at(held_since=held_since, written=written, settle_s=settle_s) == due


def test_a_burst_settles_from_its_first_change_and_a_flush_starts_the_next_afresh() -> None:
    holds: StatusHolds[str] = StatusHolds(PACING)
    assert holds.due_at("pg", 10.0) == 11.0 and not holds.holds("pg")  # asking holds nothing
    assert holds.hold("pg", 10.0) == 11.0
    assert holds.hold("pg", 10.6) == 11.0  # the rest of the burst rides on the first change's settle
    assert holds.holds("pg") and holds.held_since == {"pg": 10.0}
    assert holds.due_keys(10.9) == [] and holds.due_keys(11.0) == ["pg"]
    holds.wrote("pg", 11.0)
    holds.release("pg")
    assert not holds.holds("pg") and holds.held_since == {}
    assert holds.hold("pg", 11.5) == 14.0  # settled at 12.5, but the last write was at 11.0


def test_a_change_that_came_and_went_settles_afresh_while_its_own_wait_stays() -> None:
    holds: StatusHolds[str] = StatusHolds(PACING)
    holds.hold("pg", 10.0)
    holds.restart_settle("pg")
    assert holds.holds("pg") and holds.hold("pg", 20.0) == 21.0
    holds.hold_until("pg", 40.0)  # a wait of the writer's own: no settle starts
    holds.release("pg")
    holds.hold_until("pg", 40.0)
    assert holds.held_since == {} and holds.due_keys(40.0) == ["pg"]


def test_next_due_is_the_earliest_key_still_worth_writing() -> None:
    holds: StatusHolds[str] = StatusHolds(PACING)
    holds.hold("mine", 10.0)
    holds.hold("moved", 5.0)
    assert holds.next_due(lambda key: key == "mine") == 11.0
    assert not holds.holds("moved") and holds.held_since["moved"] == 5.0  # its settle is kept
    assert holds.next_due(lambda key: False) is None


def test_deleted_keys_are_forgotten_whole() -> None:
    holds: StatusHolds[str] = StatusHolds(PACING)
    for key in ("a", "b", "c"):
        holds.wrote(key, 1.0)
        holds.hold(key, 2.0)
    holds.forget("a")
    assert len(holds) == 2 and "a" not in holds.written_at
    holds.keep_only({"b"})
    assert len(holds) == 1 and holds.written_at == {"b": 1.0} and holds.holds("b") and not holds.holds("c")

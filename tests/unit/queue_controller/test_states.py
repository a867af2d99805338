"""Volcano's queue state table (volcano-semantics 5.1), row by row: (state, action, PodGroups?) -> state."""

from __future__ import annotations

import pytest

from vc_proto.vocabulary import Action, QueueState
from vc_queue_controller.logic.states import next_state, parse_state

OPEN, CLOSED, CLOSING, UNKNOWN = QueueState.OPEN, QueueState.CLOSED, QueueState.CLOSING, QueueState.UNKNOWN
SYNC, OPEN_Q, CLOSE_Q = Action.SYNC_QUEUE, Action.OPEN_QUEUE, Action.CLOSE_QUEUE

TABLE = [
    # Open (and "", which is Open)
    pytest.param("Open", OPEN_Q, False, OPEN, id="open-open-stays-open"),
    pytest.param("Open", CLOSE_Q, False, CLOSED, id="open-close-empty-closed"),
    pytest.param("Open", CLOSE_Q, True, CLOSING, id="open-close-with-podgroups-closing"),
    pytest.param("Open", SYNC, True, OPEN, id="open-sync-stays-open"),
    pytest.param("", SYNC, False, OPEN, id="empty-sync-becomes-open"),
    pytest.param(None, OPEN_Q, False, OPEN, id="none-open-open"),
    pytest.param("", CLOSE_Q, True, CLOSING, id="empty-close-with-podgroups-closing"),
    # Closed
    pytest.param("Closed", OPEN_Q, False, OPEN, id="closed-open-opens"),
    pytest.param("Closed", OPEN_Q, True, OPEN, id="closed-open-with-podgroups-opens"),
    pytest.param("Closed", CLOSE_Q, True, CLOSED, id="closed-close-stays-closed"),
    pytest.param("Closed", SYNC, True, CLOSED, id="closed-sync-stays-closed-even-with-podgroups"),
    pytest.param("Closed", SYNC, False, CLOSED, id="closed-sync-stays-closed"),
    # Closing
    pytest.param("Closing", OPEN_Q, True, OPEN, id="closing-open-opens"),
    pytest.param("Closing", CLOSE_Q, False, CLOSED, id="closing-close-empty-closed"),
    pytest.param("Closing", CLOSE_Q, True, CLOSING, id="closing-close-with-podgroups-stays"),
    pytest.param("Closing", SYNC, False, CLOSED, id="closing-sync-drained-closed"),
    pytest.param("Closing", SYNC, True, CLOSING, id="closing-sync-with-podgroups-stays"),
    # Unknown (and any unrecognised text)
    pytest.param("Unknown", OPEN_Q, True, OPEN, id="unknown-open-opens"),
    pytest.param("Unknown", CLOSE_Q, False, CLOSED, id="unknown-close-empty-closed"),
    pytest.param("Unknown", CLOSE_Q, True, CLOSING, id="unknown-close-with-podgroups-closing"),
    pytest.param("Unknown", SYNC, False, UNKNOWN, id="unknown-sync-stays-unknown"),
    pytest.param("Weird", SYNC, False, UNKNOWN, id="unrecognised-state-is-unknown"),
]


@pytest.mark.parametrize(("current", "action", "has_podgroups", "expected"), TABLE)
def test_queue_state_table(current: str | None, action: Action, has_podgroups: bool, expected: QueueState) -> None:
    assert next_state(current, action, has_podgroups=has_podgroups) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", OPEN), (None, OPEN), ("Open", OPEN), ("Closing", CLOSING), ("Closed", CLOSED), ("x", UNKNOWN)],
)
def test_parse_state_treats_empty_as_open(text: str | None, expected: QueueState) -> None:
    assert parse_state(text) is expected

"""Queue states as Volcano's `pkg/controllers/queue/state`: one module per state, `state_for` dispatches.

Each state maps (action, whether the queue still has PodGroups) to the next state. Parent rules and
refusals (opening under a closed parent, closing `root`) are decided before, in `logic.decide`.
"""

from __future__ import annotations

from collections.abc import Callable

from vc_proto.vocabulary import Action, QueueState
from vc_queue_controller.logic.states import closed, closing, opened, unknown

_STATES: dict[QueueState, Callable[..., QueueState]] = {
    QueueState.OPEN: opened.next_state,
    QueueState.CLOSED: closed.next_state,
    QueueState.CLOSING: closing.next_state,
    QueueState.UNKNOWN: unknown.next_state,
}


def parse_state(text: str | None) -> QueueState:
    """The queue's current state; an empty state is Open (Volcano's factory treats "" as Open)."""
    if not text:
        return QueueState.OPEN
    try:
        return QueueState(text)
    except ValueError:
        return QueueState.UNKNOWN


def next_state(current: str | None, action: Action, *, has_podgroups: bool) -> QueueState:
    return _STATES[parse_state(current)](action, has_podgroups=has_podgroups)


def closed_or_closing(state: str | None) -> bool:
    return state in (QueueState.CLOSED, QueueState.CLOSING)

"""Open (and the empty state): only CloseQueue leaves it."""

from __future__ import annotations

from vc_proto.vocabulary import Action, QueueState
from vc_queue_controller.logic.states.closing import drained


def next_state(action: Action, *, has_podgroups: bool) -> QueueState:
    if action is Action.CLOSE_QUEUE:
        return drained(has_podgroups=has_podgroups)
    return QueueState.OPEN

"""Unknown: Open and Close act as from Open; a plain sync leaves it alone."""

from __future__ import annotations

from vc_proto.vocabulary import Action, QueueState
from vc_queue_controller.logic.states.closing import drained


def next_state(action: Action, *, has_podgroups: bool) -> QueueState:
    if action is Action.OPEN_QUEUE:
        return QueueState.OPEN
    if action is Action.CLOSE_QUEUE:
        return drained(has_podgroups=has_podgroups)
    return QueueState.UNKNOWN

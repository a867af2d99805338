"""Closed: only OpenQueue leaves it."""

from __future__ import annotations

from vc_proto.vocabulary import Action, QueueState


def next_state(action: Action, *, has_podgroups: bool) -> QueueState:
    if action is Action.OPEN_QUEUE:
        return QueueState.OPEN
    return QueueState.CLOSED

"""Closing: the queue admits nothing new and becomes Closed once its last PodGroup is gone."""

from __future__ import annotations

from vc_proto.vocabulary import Action, QueueState


def drained(*, has_podgroups: bool) -> QueueState:
    """Where a closing queue stands: Volcano counts every PodGroup, whatever its phase."""
    return QueueState.CLOSING if has_podgroups else QueueState.CLOSED


def next_state(action: Action, *, has_podgroups: bool) -> QueueState:
    if action is Action.OPEN_QUEUE:
        return QueueState.OPEN
    return drained(has_podgroups=has_podgroups)

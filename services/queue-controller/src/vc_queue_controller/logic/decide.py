"""The queue controller's transition: (queue, its parent, its PodGroups, an action) -> desired queue.

Pure: the shell loads the view from its caches, calls `decide`, and writes `plan.queue` with a
compare-and-set when `plan.changed`. A plain sync (SyncQueue) only defaults the parent, refreshes
the counts, drains Closing to Closed, and applies the parent rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from vc_core.resources import Resources, format_resources
from vc_proto.scheduling import PodGroup, Queue, QueueStatus
from vc_proto.vocabulary import CLOSED_BY_PARENT_KEY, Action, QueueState
from vc_queue_controller.logic.hierarchy import imposed_action, refusal, state_of, with_default_parent
from vc_queue_controller.logic.states import next_state
from vc_queue_controller.logic.status import PodGroupCounts
from vc_queue_controller.logic.tally import QueueTally


@dataclass(frozen=True, slots=True)
class QueueView:
    """The queue, its parent, and its PodGroups: as a list, or as the tally the caches keep (cheaper)."""

    queue: Queue
    parent: Queue | None
    podgroups: Sequence[PodGroup] = ()
    tally: QueueTally | None = None


@dataclass(frozen=True, slots=True)
class QueuePlan:
    queue: Queue
    changed: bool
    # The action that ran: the requested one, one the parent imposed, or SyncQueue after a refusal.
    action: Action
    previous_state: str | None
    state: QueueState
    refused: str | None = None
    # What the status was computed from (the controller's metrics show the same figures).
    counts: PodGroupCounts = field(default_factory=PodGroupCounts)
    inqueue: Resources = field(default_factory=dict)

    @property
    def state_changed(self) -> bool:
        """A real change of state: a queue without a status yet is Open (Volcano's default), so its first
        status saying Open changes nothing (it said "queue is Open (was Open)")."""
        return (self.previous_state or QueueState.OPEN) != self.state


def decide(view: QueueView, action: Action = Action.SYNC_QUEUE) -> QueuePlan:
    queue = with_default_parent(view.queue)
    imposed = imposed_action(queue, view.parent) if action is Action.SYNC_QUEUE else None
    effective = imposed or action
    refused = refusal(effective, queue, view.parent)
    if refused is not None:
        effective = Action.SYNC_QUEUE
    tally = view.tally if view.tally is not None else QueueTally.of(view.podgroups)
    state = next_state(state_of(queue), effective, has_podgroups=tally.members > 0)
    queue = _annotate(queue, effective, imposed=imposed is not None)
    counts, inqueue = tally.counts(), tally.inqueue()
    queue = _with_status(queue, state, counts, inqueue)
    return QueuePlan(
        queue=queue,
        changed=queue != view.queue,
        action=effective,
        previous_state=state_of(view.queue),
        state=state,
        refused=refused,
        counts=counts,
        inqueue=inqueue,
    )


def _annotate(queue: Queue, action: Action, *, imposed: bool) -> Queue:
    """Mark a queue closed by its parent; clear the mark when it opens (absent means "false")."""
    annotations = dict(queue.metadata.annotations or {})
    if action is Action.CLOSE_QUEUE and imposed:
        annotations[CLOSED_BY_PARENT_KEY] = "true"
    elif action is Action.OPEN_QUEUE and CLOSED_BY_PARENT_KEY in annotations:
        annotations[CLOSED_BY_PARENT_KEY] = "false"
    if annotations == (queue.metadata.annotations or {}):
        return queue
    return msgspec.structs.replace(queue, metadata=msgspec.structs.replace(queue.metadata, annotations=annotations))


def _with_status(queue: Queue, state: QueueState, counts: PodGroupCounts, inqueue: Resources) -> Queue:
    """Our fields of the status; `allocated` and `reservation` belong to the scheduler and stay."""
    status = msgspec.structs.replace(
        queue.status or QueueStatus(),
        state=state.value,
        pending=counts.pending,
        inqueue=counts.inqueue,
        running=counts.running,
        unknown=counts.unknown,
        completed=counts.completed,
        inqueue_resources=format_resources(inqueue) or None,
    )
    return msgspec.structs.replace(queue, status=status)

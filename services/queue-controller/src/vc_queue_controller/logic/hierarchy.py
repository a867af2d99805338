"""Parent rules (Volcano syncHierarchicalQueue, openQueue, closeQueue): a closed parent closes its
open children and marks them; reopening the parent reopens exactly the children it closed."""

from __future__ import annotations

import msgspec

from vc_proto.scheduling import Queue, QueueSpec
from vc_proto.vocabulary import CLOSED_BY_PARENT_KEY, ROOT_QUEUE, Action, QueueState
from vc_queue_controller.logic.states import closed_or_closing, parse_state


def state_of(queue: Queue) -> str | None:
    return queue.status.state if queue.status else None


def parent_name(queue: Queue) -> str | None:
    return queue.spec.parent if queue.spec else None


def closed_by_parent(queue: Queue) -> bool:
    return (queue.metadata.annotations or {}).get(CLOSED_BY_PARENT_KEY) == "true"


def with_default_parent(queue: Queue) -> Queue:
    """Every queue but `root` hangs under a parent; none given means `root`."""
    if queue.metadata.name == ROOT_QUEUE or parent_name(queue):
        return queue
    spec = queue.spec or QueueSpec()
    return msgspec.structs.replace(queue, spec=msgspec.structs.replace(spec, parent=ROOT_QUEUE))


def imposed_action(queue: Queue, parent: Queue | None) -> Action | None:
    """What the parent's state asks of this queue on a plain sync, if anything."""
    if parent is None:
        return None
    if closed_or_closing(state_of(parent)) and not closed_or_closing(state_of(queue)):
        return Action.CLOSE_QUEUE
    parent_open = parse_state(state_of(parent)) is QueueState.OPEN
    if parent_open and closed_or_closing(state_of(queue)) and closed_by_parent(queue):
        return Action.OPEN_QUEUE
    return None


def refusal(action: Action, queue: Queue, parent: Queue | None) -> str | None:
    """Why `action` may not run on `queue` (Volcano's messages), or None."""
    name = queue.metadata.name
    if action is Action.CLOSE_QUEUE and name == ROOT_QUEUE:
        return "root queue can not be closed"
    if action is Action.OPEN_QUEUE and parent is not None and closed_or_closing(state_of(parent)):
        return (
            f"Failed to open queue {name} because its parent queue {parent.metadata.name} "
            "is closing or closed. Open the parent queue first."
        )
    return None

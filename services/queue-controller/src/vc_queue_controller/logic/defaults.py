"""The queues that always exist: `root` (the hierarchy's top, never reclaimed) and `default`."""

from __future__ import annotations

from typing import Final

from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus
from vc_proto.vocabulary import DEFAULT_QUEUE, ROOT_QUEUE, QueueState

ALWAYS_PRESENT: Final = (ROOT_QUEUE, DEFAULT_QUEUE)


def default_queue(name: str) -> Queue:
    """Volcano's newDefaultAndRootQueue: both weight 1; root not reclaimable, default reclaimable."""
    if name not in ALWAYS_PRESENT:
        raise KeyError(name)
    root = name == ROOT_QUEUE
    spec = QueueSpec(weight=1, reclaimable=not root, parent=None if root else ROOT_QUEUE)
    return Queue(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name),
        spec=spec,
        status=QueueStatus(state=QueueState.OPEN.value),
    )

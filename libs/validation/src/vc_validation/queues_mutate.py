"""Queue defaulting on CREATE (Volcano `queues/mutate/mutate_queue.go`): reclaimable true, weight 1, and
the hierarchical-DRF annotations rooted at `root`."""

from __future__ import annotations

from typing import Final

from msgspec.structs import replace

from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import Queue, QueueSpec

HIERARCHY_ANNOTATION: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION: Final = "volcano.sh/hierarchy-weights"
DEFAULT_WEIGHT: Final = 1


def mutate_queue(queue: Queue) -> Queue:
    spec = queue.spec or QueueSpec()
    spec = replace(
        spec,
        reclaimable=True if spec.reclaimable is None else spec.reclaimable,
        weight=spec.weight or DEFAULT_WEIGHT,
    )
    return replace(queue, spec=spec, metadata=_rooted_hierarchy(queue))


def _rooted_hierarchy(queue: Queue) -> ObjectMeta:
    annotations = queue.metadata.annotations or {}
    path = annotations.get(HIERARCHY_ANNOTATION, "")
    weights = annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
    if not path or not weights or path.startswith("root"):
        return queue.metadata
    rooted = {**annotations, HIERARCHY_ANNOTATION: f"root/{path}", HIERARCHY_WEIGHTS_ANNOTATION: f"1/{weights}"}
    return replace(queue.metadata, annotations=rooted)

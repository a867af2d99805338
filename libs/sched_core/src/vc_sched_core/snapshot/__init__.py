"""Snapshot input: Kubernetes-shaped objects decoded into the views a scheduling cycle reads."""

from __future__ import annotations

from vc_sched_core.snapshot.cluster import (
    ClusterSnapshot,
    NodeObj,
    PodGroupCondition,
    PodGroupObj,
    PodObj,
    PriorityClassObj,
    QueueObj,
)
from vc_sched_core.snapshot.loader import SnapshotError, load_objects, load_snapshot

__all__ = [
    "ClusterSnapshot",
    "NodeObj",
    "PodGroupCondition",
    "PodGroupObj",
    "PodObj",
    "PriorityClassObj",
    "QueueObj",
    "SnapshotError",
    "load_objects",
    "load_snapshot",
]

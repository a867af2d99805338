"""What a cycle decided: the effects the service shell performs (bind, evict, status patches)."""

from __future__ import annotations

from dataclasses import dataclass

from vc_sched_core.snapshot.cluster import PodGroupCondition


@dataclass(frozen=True, slots=True)
class Bind:
    pod: str  # "<namespace>/<name>"
    uid: str
    node: str
    # Annotations the bind writes on the pod with its node, as a Binding's annotations (Volcano's
    # TaskInfo.PodAnnotations from device reservations: deviceshare's GPU assignment), sorted pairs.
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Evict:
    pod: str
    uid: str
    reason: str  # "preempt", "reclaim", "shuffle"


@dataclass(frozen=True, slots=True)
class PodGroupStatusUpdate:
    """The PodGroup status as Volcano's job updater writes it at session close."""

    podgroup: str  # "<namespace>/<name>"
    phase: str
    conditions: tuple[PodGroupCondition, ...]
    running: int
    succeeded: int
    failed: int


@dataclass(frozen=True, slots=True)
class QueueStatusUpdate:
    queue: str
    allocated: dict[str, str]


Decision = Bind | Evict | PodGroupStatusUpdate | QueueStatusUpdate

"""What admission needs to know about the rest of the system, passed in read-only.

The rules never read a store or a bus: the front-end (embedded NATS API or Kubernetes webhook) builds
an `AdmissionContext` from its local cache and hands it to `review`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from vc_proto.scheduling import Queue
from vc_proto.vocabulary import DEFAULT_SCHEDULER_NAME
from vc_validation.limits import MAX_QUEUE_DEPTH
from vc_validation.pods_mutate import ResourceGroup


class AdmissionContext(Protocol):
    """Read-only view of cluster state for the rules."""

    @property
    def queues(self) -> Mapping[str, Queue]:
        """Every queue by name (the scheduler creates `root` and `default` at start)."""
        ...

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        """Schedulers this admission serves; the first is the default for jobs (Volcano `--scheduler-name`)."""
        ...

    @property
    def max_queue_depth(self) -> int: ...

    @property
    def resource_groups(self) -> tuple[ResourceGroup, ...]:
        """Pod resource groups from the admission configuration (Volcano `--admission-conf`)."""
        ...

    @property
    def queue_allocation_gate(self) -> bool:
        """Volcano's SchedulingGatesQueueAdmission feature gate (off by default)."""
        ...

    def queue_has_workloads(self, name: str) -> bool:
        """True when any Job or PodGroup is submitted to the queue."""
        ...

    def namespace_annotations(self, namespace: str) -> Mapping[str, str]:
        """Annotations of a namespace (PodGroup defaulting reads `scheduling.volcano.sh/queue-name`)."""
        ...


def _no_workloads(_name: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class StaticContext:
    """An `AdmissionContext` over plain snapshots: what tests and simple front-ends use."""

    queues: Mapping[str, Queue] = field(default_factory=lambda: MappingProxyType({}))
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    max_queue_depth: int = MAX_QUEUE_DEPTH
    workloads: Callable[[str], bool] = _no_workloads
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: MappingProxyType({}))
    resource_groups: tuple[ResourceGroup, ...] = ()
    queue_allocation_gate: bool = False

    def queue_has_workloads(self, name: str) -> bool:
        return self.workloads(name)

    def namespace_annotations(self, namespace: str) -> Mapping[str, str]:
        return self.namespaces.get(namespace, {})


_: AdmissionContext = StaticContext()

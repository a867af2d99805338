"""Prometheus gauges under Volcano's names (`volcano_queue_pod_group_*_count{queue_name}`), plus the
inqueue figures (`volcano_queue_inqueue_*`). Each instance exports only the queues it owns."""

from __future__ import annotations

from fractions import Fraction

from prometheus_client import Counter, Gauge

from vc_core.resources import CPU, MEMORY, Resources, schedulable_resources
from vc_queue_controller.logic.status import PodGroupCounts

_LABEL = ["queue_name"]
POD_GROUP_COUNTS = {
    field: Gauge(f"volcano_queue_pod_group_{field}_count", f"PodGroups in phase {field.capitalize()}", _LABEL)
    for field in ("inqueue", "pending", "running", "unknown", "completed")
}
INQUEUE_MILLI_CPU = Gauge("volcano_queue_inqueue_milli_cpu", "Σ minResources cpu of Inqueue PodGroups", _LABEL)
INQUEUE_MEMORY = Gauge("volcano_queue_inqueue_memory_bytes", "Σ minResources memory of Inqueue PodGroups", _LABEL)
INQUEUE_SCALAR = Gauge(
    "volcano_queue_inqueue_scalar_resources",
    "Σ minResources of Inqueue PodGroups (milli-units, as Volcano exports scalar resources)",
    ["queue_name", "resource"],
)
STATUS_WRITES = Counter("tephra_queue_controller_status_writes_total", "Queue writes by the queue controller")
COMMANDS = Counter("tephra_queue_controller_commands_total", "Queue commands taken", ["action"])


class QueueMetrics:
    def __init__(self) -> None:
        self._scalars: dict[str, set[str]] = {}

    def observe(self, queue: str, counts: PodGroupCounts, inqueue: Resources) -> None:
        inqueue = schedulable_resources(inqueue)  # quota keys (requests.*, limits.*, count/pods) are no resource
        for field, gauge in POD_GROUP_COUNTS.items():
            gauge.labels(queue).set(getattr(counts, field))
        INQUEUE_MILLI_CPU.labels(queue).set(float(inqueue.get(CPU, Fraction(0)) * 1000))
        INQUEUE_MEMORY.labels(queue).set(float(inqueue.get(MEMORY, Fraction(0))))
        scalars = {name for name in inqueue if name not in (CPU, MEMORY)}
        for name in self._scalars.get(queue, set()) - scalars:
            INQUEUE_SCALAR.remove(queue, name)
        for name in scalars:
            INQUEUE_SCALAR.labels(queue, name).set(float(inqueue[name] * 1000))  # Volcano: milli-units
        self._scalars[queue] = scalars

    def forget(self, queue: str) -> None:
        """The queue is gone or another instance owns it now: stop exporting it here."""
        for gauge in (*POD_GROUP_COUNTS.values(), INQUEUE_MILLI_CPU, INQUEUE_MEMORY):
            _remove(gauge, queue)
        for name in self._scalars.pop(queue, set()):
            _remove(INQUEUE_SCALAR, queue, name)


def _remove(gauge: Gauge, *labels: str) -> None:
    try:
        gauge.remove(*labels)
    except KeyError:
        pass  # never exported here

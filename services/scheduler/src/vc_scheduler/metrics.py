"""The scheduler service's Prometheus metrics: Volcano's names where Volcano has one, `tephra_scheduler_*`
for what only an active-active scheduler has (ledger conflicts and retries, ownership)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from prometheus_client import Counter, Gauge, Histogram

from vc_core.resources import CPU, MEMORY
from vc_scheduling.snapshot.cluster import QueueObj

E2E = Histogram(
    "volcano_e2e_scheduling_latency_milliseconds",
    "E2E scheduling latency (ms)",
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000),
)
ACTION = Histogram(
    "volcano_action_scheduling_latency_milliseconds",
    "Action latency (ms)",
    ["action"],
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000),
)
ATTEMPTS = Counter("volcano_schedule_attempts_total", "Scheduling attempts by result", ["result"])
TASK_LATENCY = Histogram(
    "volcano_task_scheduling_latency_milliseconds",
    "Task scheduling latency (ms) by stage",
    ["stage"],
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000),
)
UNSCHEDULE_JOBS = Gauge("volcano_unschedule_job_count", "Jobs that could not be scheduled in the last cycle")

QUEUE_ALLOCATED_CPU = Gauge("volcano_queue_allocated_milli_cpu", "Allocated CPU (milli) per queue", ["queue_name"])
QUEUE_ALLOCATED_MEMORY = Gauge("volcano_queue_allocated_memory_bytes", "Allocated memory per queue", ["queue_name"])
QUEUE_DESERVED_CPU = Gauge("volcano_queue_deserved_milli_cpu", "Deserved CPU (milli) per queue", ["queue_name"])
QUEUE_DESERVED_MEMORY = Gauge("volcano_queue_deserved_memory_bytes", "Deserved memory per queue", ["queue_name"])
QUEUE_CAPACITY_CPU = Gauge(
    "volcano_queue_capacity_milli_cpu", "Capability CPU (milli) per queue (-1: unlimited)", ["queue_name"]
)
QUEUE_CAPACITY_MEMORY = Gauge(
    "volcano_queue_capacity_memory_bytes", "Capability memory per queue (-1: unlimited)", ["queue_name"]
)
QUEUE_WEIGHT = Gauge("volcano_queue_weight", "Queue weight", ["queue_name"])

BINDS = Counter("tephra_scheduler_binds_total", "Binds written", ["instance", "outcome"])
EVICTS = Counter("tephra_scheduler_evictions_total", "Evictions written", ["instance", "outcome"])
PG_WRITES = Counter("tephra_scheduler_podgroup_status_writes_total", "PodGroup status writes", ["instance", "outcome"])
QUEUE_WRITES = Counter(
    "tephra_scheduler_queue_status_writes_total", "Queue status.allocated writes", ["instance", "outcome"]
)
GANGS = Counter(
    "tephra_scheduler_gang_commits_total",
    "Gang commits by outcome (ok, conflict, fenced, moved, error)",
    ["instance", "outcome"],
)
LEDGER_WRITES = Counter("tephra_scheduler_ledger_writes_total", "Ledger compare-and-set writes that won", ["instance"])
LEDGER_RETRIES = Counter(
    "tephra_scheduler_ledger_retries_total", "Ledger compare-and-set writes that lost a race and re-read", ["instance"]
)
LEDGER_CONFLICTS = Counter(
    "tephra_scheduler_ledger_conflicts_total",
    "Reservations refused because the node or queue was full by the ledger",
    ["instance", "scope"],
)
OWNED = Gauge("tephra_scheduler_owned_podgroups", "PodGroups this instance owns", ["instance"])
MEMBERS = Gauge("tephra_scheduler_members", "Live scheduler instances as this instance sees them", ["instance"])
ERRORS = Counter(
    "tephra_scheduler_dispatch_errors_total",
    "Decisions dropped on a transport error (retried by a later cycle)",
    ["instance"],
)
CYCLE_ERRORS = Counter("tephra_scheduler_cycle_errors_total", "Cycles that raised (skipped)", ["instance"])
FENCED = Counter(
    "tephra_scheduler_fenced_writes_total", "Writes skipped because this instance's lease lapsed", ["instance"]
)


def _gauge_value(res: Mapping[str, Fraction], name: str, scale: int = 1) -> float:
    return float(res.get(name, Fraction(0)) * scale)


def record_queues(queues: Iterable[QueueObj], allocated: Mapping[str, Mapping[str, Fraction]]) -> None:
    """Queue gauges from the cluster-wide view (every instance reports the same values)."""
    for queue in queues:
        alloc = allocated.get(queue.name, {})
        QUEUE_ALLOCATED_CPU.labels(queue.name).set(_gauge_value(alloc, CPU, 1000))
        QUEUE_ALLOCATED_MEMORY.labels(queue.name).set(_gauge_value(alloc, MEMORY))
        QUEUE_DESERVED_CPU.labels(queue.name).set(_gauge_value(queue.deserved, CPU, 1000))
        QUEUE_DESERVED_MEMORY.labels(queue.name).set(_gauge_value(queue.deserved, MEMORY))
        QUEUE_CAPACITY_CPU.labels(queue.name).set(
            _gauge_value(queue.capability, CPU, 1000) if CPU in queue.capability else -1
        )
        QUEUE_CAPACITY_MEMORY.labels(queue.name).set(
            _gauge_value(queue.capability, MEMORY) if MEMORY in queue.capability else -1
        )
        QUEUE_WEIGHT.labels(queue.name).set(queue.weight)

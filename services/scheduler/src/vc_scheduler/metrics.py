"""The scheduler service's Prometheus metrics: Volcano's names, types, units and labels where Volcano has
one (pkg/scheduler/metrics: `volcano_*`, latencies in milliseconds, queues by `queue_name`, scalar
resources such as GPUs in milli-units), `tephra_scheduler_*` for what only an active-active scheduler has
(ledger conflicts and retries, ownership).

`record_cycle` is the one entry the loop calls after each cycle. Per-cycle figures (latencies, per-task
stage times, attempts, preemption, drf's job shares, gang's job retries, deviceshare's vGPUs, the
scheduling time of the jobs the cycle made ready) come from the cycle's result; the state
gauges (queues, unschedulable jobs and their waiting tasks) are the whole cluster's, refreshed at most
every STATE_PERIOD_S, Prometheus' default scrape interval. The service counts them from the cache's
index, per PodGroup (`index_tally`: a walk over its own PodGroups and the cycle's binds, on the event
loop, plus the other shards' `sums` records, shard_records.py), and the rest (water-filling, the
series) runs in a worker thread; `tally`, a walk over every pod of a snapshot (about 0.5 s of CPU at
100,000 pods), is what they are defined by and what a share's own jobs are counted with.

With several instances, one of them exports the whole cluster's gauges (each queue's figures and tasks
by status, each namespace's share): the owner of CLUSTER_GAUGES_KEY on the ring. Every queue and
namespace series then comes from one instance, so a sum over the instances' scrapes is the cluster's
figure, and the other instances skip that count. Each instance exports what concerns its
own PodGroups (unschedulable jobs and their waiting tasks, job times and retries) from its share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fractions import Fraction
from functools import partial
from typing import Final, TypeVar

import numpy as np
import structlog
from prometheus_client import Counter, Gauge, Histogram

from vc_core.resources import CPU, MEMORY, PODS
from vc_runtime.bare_counter import BareCounter
from vc_sched_core.cycle import CycleResult
from vc_sched_core.framework.decisions import Evict
from vc_sched_core.framework.model import QueueInfo
from vc_sched_core.framework.resources import ResourceSpace, less_equal
from vc_sched_core.plugins.proportion import water_fill
from vc_sched_core.plugins.queue_accounts import QueueAttr, capability_vector, share
from vc_sched_core.plugins.shares import dominant_share as vector_share
from vc_sched_core.snapshot.cluster import (
    DEFAULT_QUEUE,
    GROUP_NAME_ANNOTATION,
    ClusterSnapshot,
    PodGroupObj,
    QueueObj,
)
from vc_sched_core.snapshot.vgpu import VGPUDeviceFigures, VGPUPodFigures
from vc_scheduler.cluster_index import ClusterIndex, is_asked, is_placed, task_status

log = structlog.get_logger(__name__)
STATE_PERIOD_S: Final = 15.0
CLUSTER_GAUGES_KEY: Final = "metrics:cluster"  # the ring key whose owner exports the whole cluster's gauges
MAX_JOB_SERIES: Final = 10_000  # per-job gauges kept at most (Volcano keeps one series per job)
# Volcano's buckets are ExponentialBuckets(5, 2, 15) (5 ms .. 82 s); Tephra's cycles and plugins are often
# well under 5 ms, so finer buckets come first (the names and units, what dashboards query, are Volcano's).
_MS_BUCKETS: Final = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240, 20480, 40960)

E2E = Histogram(
    "volcano_e2e_scheduling_latency_milliseconds",
    "E2e scheduling latency in milliseconds (one session: open, actions, close)",
    buckets=_MS_BUCKETS,
)
OPEN_SESSION = Histogram(
    "volcano_open_session_duration_milliseconds",
    "Duration of opening a session in milliseconds (the snapshot into a session, plugins' OnSessionOpen)",
    buckets=_MS_BUCKETS,
)
ACTION = Histogram(
    "volcano_action_scheduling_latency_milliseconds",
    "Action scheduling latency in milliseconds",
    ["action"],
    buckets=_MS_BUCKETS,
)
PLUGIN = Histogram(
    "volcano_plugin_scheduling_latency_milliseconds",
    "Plugin scheduling latency in milliseconds",
    ["plugin", "OnSession"],
    buckets=_MS_BUCKETS,
)
JOB_E2E = Histogram(
    "volcano_e2e_job_scheduling_latency_milliseconds",
    "E2e job scheduling latency in milliseconds (job creation to its last needed task placed)",
    buckets=tuple(32 * 2**i for i in range(10)),
)
JOB_DURATION = Gauge(
    "volcano_e2e_job_scheduling_duration",
    "E2E job scheduling duration (milliseconds, job creation to its last needed task placed)",
    ["job_name", "queue", "job_namespace"],
)
JOB_START = Gauge(
    "volcano_e2e_job_scheduling_start_time",
    "E2E job scheduling start time (Unix seconds of the job's creation)",
    ["job_name", "queue", "job_namespace"],
)
ATTEMPTS = Counter(
    "volcano_schedule_attempts_total",
    "Number of attempts to schedule pods, by the result ('scheduled' or 'unschedulable')",
    ["result"],
)
PREEMPTION_VICTIMS = Gauge("volcano_pod_preemption_victims", "Number of selected preemption victims (last cycle)")
# Volcano's counter is `volcano_total_preemption_attempts`, with no `_total` suffix (a BareCounter).
PREEMPTION_ATTEMPTS = BareCounter(
    "volcano_total_preemption_attempts",
    "Total preemption attempts till now (Tephra counts the cycles whose preempt action chose victims)",
)
EVICTIONS = Counter(
    "volcano_eviction_transactions",  # scraped as volcano_eviction_transactions_total, Volcano's name
    "Total eviction transactions by the action that evicted (preempt, reclaim)",
    ["action"],
)
UNSCHEDULE_TASKS = Gauge("volcano_unschedule_task_count", "Number of tasks could not be scheduled", ["job_id"])
TASK_LATENCY = Histogram(
    "volcano_task_scheduling_latency_milliseconds",
    "Task scheduling latency (ms) by stage",
    ["stage"],
    buckets=(1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000),
)
UNSCHEDULE_JOBS = Gauge("volcano_unschedule_job_count", "Number of jobs could not be scheduled")
# Volcano's buckets: prometheus.ExponentialBucketsRange(0.1, 500, 20).
_STAGE_BUCKETS: Final = tuple(0.1 * (500 / 0.1) ** (i / 19) for i in range(20))
STAGE = Histogram(
    "volcano_scheduling_stage_duration_milliseconds",
    "Duration of per-task scheduling stages (Predicate, Scoring, Bind) in milliseconds",
    ["stage"],
    buckets=_STAGE_BUCKETS,
)
JOB_SHARE = Gauge("volcano_job_share", "Share for one job (drf's dominant share)", ["job_ns", "job_id"])
# Volcano's is a counter named `volcano_job_retry_counts`, with no `_total` suffix (a BareCounter).
JOB_RETRIES = BareCounter(
    "volcano_job_retry_counts",
    "Number of retry counts for one job (the sessions that closed with it not ready)",
    ["job_id"],
)
# Volcano's vGPU device metrics (pkg/scheduler/api/devices/nvidia/vgpu/metrics.go): per GPU by its UUID and
# node, per pod and GPU also by the pod's name; device memory in MiB, cores in percent of the GPU.
_DEVICE: Final = ["devID", "NodeName"]
VGPU_SHARED = Gauge("volcano_vgpu_device_shared_number", "The number of vgpu tasks sharing this card", _DEVICE)
VGPU_MEMORY = Gauge("volcano_vgpu_device_allocated_memory", "The number of vgpu memory allocated in this card", _DEVICE)
VGPU_CORES = Gauge(
    "volcano_vgpu_device_allocated_cores", "The percentage of gpu compute cores allocated in this card", _DEVICE
)
VGPU_MEMORY_LIMIT = Gauge("volcano_vgpu_device_memory_limit", "The number of total device memory in this card", _DEVICE)
VGPU_POD_MEMORY = Gauge(
    "volcano_vgpu_device_memory_allocation_for_a_certain_pod",
    "The vgpu device memory allocated for a certain pod",
    [*_DEVICE, "podName"],
)
VGPU_POD_CORES = Gauge(
    "volcano_vgpu_device_core_allocation_for_a_certain_pod",
    "The vgpu device core allocated for a certain pod",
    [*_DEVICE, "podName"],
)
MAX_VGPU_SERIES: Final = 10_000  # GPUs, and pod-GPU pairs, with series at most

QUEUE_ALLOCATED_CPU = Gauge("volcano_queue_allocated_milli_cpu", "Allocated CPU (milli) per queue", ["queue_name"])
QUEUE_ALLOCATED_MEMORY = Gauge("volcano_queue_allocated_memory_bytes", "Allocated memory per queue", ["queue_name"])
QUEUE_DESERVED_CPU = Gauge(
    "volcano_queue_deserved_milli_cpu", "Deserved CPU count for one queue (milli; proportion's share)", ["queue_name"]
)
QUEUE_DESERVED_MEMORY = Gauge(
    "volcano_queue_deserved_memory_bytes", "Deserved memory for one queue (proportion's share)", ["queue_name"]
)
QUEUE_CAPACITY_CPU = Gauge(
    "volcano_queue_capacity_milli_cpu", "Capability CPU (milli) per queue (-1: unlimited)", ["queue_name"]
)
QUEUE_CAPACITY_MEMORY = Gauge(
    "volcano_queue_capacity_memory_bytes", "Capability memory per queue (-1: unlimited)", ["queue_name"]
)
QUEUE_WEIGHT = Gauge("volcano_queue_weight", "Weight for one queue", ["queue_name"])
QUEUE_ALLOCATED_SCALAR = Gauge(
    "volcano_queue_allocated_scalar_resources",
    "Allocated scalar resource for one queue (milli-units)",
    ["queue_name", "resource"],
)
QUEUE_REQUEST_CPU = Gauge(
    "volcano_queue_request_milli_cpu", "Requested CPU count for one queue (milli)", ["queue_name"]
)
QUEUE_REQUEST_MEMORY = Gauge("volcano_queue_request_memory_bytes", "Requested memory for one queue", ["queue_name"])
QUEUE_REQUEST_SCALAR = Gauge(
    "volcano_queue_request_scalar_resources",
    "Requested scalar resource for one queue (milli-units)",
    ["queue_name", "resource"],
)
QUEUE_DESERVED_SCALAR = Gauge(
    "volcano_queue_deserved_scalar_resources",
    "Deserved scalar resource for one queue (milli-units)",
    ["queue_name", "resource"],
)
QUEUE_CAPACITY_SCALAR = Gauge(
    "volcano_queue_capacity_scalar_resources",
    "Scalar resource capacity for one queue (milli-units; only the resources its capability names)",
    ["queue_name", "resource"],
)
QUEUE_REAL_CAPACITY_CPU = Gauge(
    "volcano_queue_real_capacity_milli_cpu",
    "CPU count real capacity for one queue (milli): its capability within the cluster less others' guarantees",
    ["queue_name"],
)
QUEUE_REAL_CAPACITY_MEMORY = Gauge(
    "volcano_queue_real_capacity_memory_bytes", "Memory real capacity for one queue", ["queue_name"]
)
QUEUE_REAL_CAPACITY_SCALAR = Gauge(
    "volcano_queue_real_capacity_scalar_resources",
    "Scalar resource real capacity for one queue (milli-units)",
    ["queue_name", "resource"],
)
QUEUE_SHARE = Gauge(
    "volcano_queue_share", "Share for one queue (max over resources of allocated/deserved)", ["queue_name"]
)
QUEUE_OVERUSED = Gauge(
    "volcano_queue_overused", "Whether one queue is overused (1: allocated >= deserved)", ["queue_name"]
)
QUEUE_TASKS = Gauge(
    "volcano_queue_session_start_task_count",
    "Tasks of one queue's jobs by status as a session starts (the queue's own jobs, not its children's)",
    ["queue_name", "status"],
)
# Task statuses as Volcano names them in the label; allocated, pipelined and binding exist only inside a
# session, so at its start they are 0.
TASK_STATUSES: Final = (
    "pending", "allocated", "pipelined", "binding", "bound", "running", "releasing", "succeeded", "failed", "unknown",
)  # fmt: skip
# Volcano's namespace fair-share figures: a namespace's dominant share of the cluster (its allocated over
# the cluster's allocatable, the largest over resources), its weight (1: Tephra has no namespace weights)
# and share / weight.
NAMESPACE_SHARE = Gauge("volcano_namespace_share", "Share for one namespace", ["namespace_name"])
NAMESPACE_WEIGHT = Gauge("volcano_namespace_weight", "Weight for one namespace", ["namespace_name"])
NAMESPACE_WEIGHTED_SHARE = Gauge(
    "volcano_namespace_weighted_share", "Weighted share for one namespace", ["namespace_name"]
)
NAMESPACE_WEIGHT_DEFAULT: Final = 1

BINDS = Counter("tephra_scheduler_binds_total", "Binds written", ["instance", "outcome"])
EVICTS = Counter("tephra_scheduler_evictions_total", "Evictions written", ["instance", "outcome"])
PG_WRITES = Counter("tephra_scheduler_podgroup_status_writes_total", "PodGroup status writes", ["instance", "outcome"])
QUEUE_WRITES = Counter(
    "tephra_scheduler_queue_status_writes_total", "Queue status.allocated writes", ["instance", "outcome"]
)
GANGS = Counter(
    "tephra_scheduler_gang_commits_total",
    "Gang commits by outcome (ok, partial, conflict, fenced, moved, error)",
    ["instance", "outcome"],
)
LEDGER_WRITES = Counter("tephra_scheduler_ledger_writes_total", "Ledger compare-and-set writes that won", ["instance"])
LEDGER_RETRIES = Counter(
    "tephra_scheduler_ledger_retries_total", "Ledger compare-and-set writes that lost a race and re-read", ["instance"]
)
LEDGER_CONFLICTS = Counter(
    "tephra_scheduler_ledger_conflicts_total",
    "Reservations refused because the capped queue was full by the ledger",
    ["instance", "scope"],
)
LOANS = Counter(
    "tephra_scheduler_loans_total",
    "Asks for room on this instance's nodes by other instances, by outcome (granted, refused)",
    ["instance", "outcome"],
)
SHARD_RECORDS = Counter(
    "tephra_scheduler_shard_records_total",
    "Records of its shards this instance wrote for the others (shard_records.py), by outcome (written, failed)",
    ["instance", "outcome"],
)
OWNED = Gauge("tephra_scheduler_owned_podgroups", "PodGroups this instance owns", ["instance"])
OWNED_NODES = Gauge("tephra_scheduler_owned_nodes", "Nodes this instance owns (plans on first)", ["instance"])
FOREIGN_BINDS = Counter(
    "tephra_scheduler_foreign_node_binds_total",
    "Binds a cycle planned onto nodes another instance owns (capacity borrowed for what did not fit)",
    ["instance"],
)
BORROWING = Counter(
    "tephra_scheduler_borrowing_sessions_total",
    "Second sessions over other instances' nodes, for admitted PodGroups the share could not place",
    ["instance"],
)
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


# -- per cycle -------------------------------------------------------------------------------------------
_ON_SESSION: Final = {"open": "OnSessionOpen", "close": "OnSessionClose"}


def record_timings(result: CycleResult) -> None:
    """The session's, each action's and each plugin's time (run_cycle's `action:NAME`, `plugin:NAME:open`
    and `plugin:NAME:close` durations), in milliseconds as Volcano reports them."""
    E2E.observe(result.stats.duration_s * 1000)
    for name, seconds in result.stats.durations_s.items():
        kind, _, rest = name.partition(":")
        if kind == "action":
            ACTION.labels(rest).observe(seconds * 1000)
        elif name == "session:open":
            OPEN_SESSION.observe(seconds * 1000)
        elif kind == "plugin":
            plugin, _, when = rest.rpartition(":")
            if plugin and when in _ON_SESSION:
                PLUGIN.labels(plugin, _ON_SESSION[when]).observe(seconds * 1000)


def record_stages(result: CycleResult) -> None:
    """Each task's Predicate and Scoring time this cycle (node_search), in milliseconds."""
    for stage, durations in result.stats.stages_s.items():
        if durations:
            histogram = STAGE.labels(stage)
            for seconds in durations:
                histogram.observe(seconds * 1000)


@dataclass
class ShareRecorder:
    """volcano_job_share from drf's shares at session close: only the series whose share moved are set,
    those of jobs that left the session are removed (one set difference each, when anything changed). A
    job held out of the sessions while settled (share.py) keeps its series at the share the last session
    that had it left it, until it is back in one or gone; its allocation cannot move while it is held
    (any change brings it back), but the cluster's resources can, so when a session counts other totals
    than the last one the held jobs' shares are worked out again, as drf would, from their allocations."""

    _shares: dict[str, float] = field(default_factory=dict)
    _series: set[str] = field(default_factory=set)  # job uids (`ns/name`) with a series
    _held: set[str] = field(default_factory=set)  # jobs whose series stays while they are held out
    _total: Mapping[str, float] = field(default_factory=dict)  # the resources the held shares divide by

    def record(
        self,
        shares: dict[str, float],
        held: AbstractSet[str] = frozenset(),
        total: Mapping[str, float] | None = None,
        allocated_of: Callable[[str], Mapping[str, float]] | None = None,
    ) -> None:
        """`total`: the resources the session divided by (CycleStats.total); `allocated_of`: a held job's
        allocation (ClusterIndex.allocated_of). Without them held shares stay as they were."""
        self._forget_unheld(shares, held)
        if shares != self._shares:
            self._set(shares, held)
        if total is not None and total != self._total:
            if allocated_of is not None:  # (at most MAX_JOB_SERIES jobs, when the cluster's resources move)
                for key in self._held:
                    JOB_SHARE.labels(*_ns_name(key)).set(dominant_share(allocated_of(key), total))
            self._total = total

    def _forget_unheld(self, shares: dict[str, float], held: AbstractSet[str]) -> None:
        """The series of a job no longer held goes, unless the session has it again."""
        if not self._held:
            return
        for key in self._held - held:
            self._held.discard(key)
            if key not in shares and key in self._series:
                self._series.discard(key)
                _remove(JOB_SHARE, *_ns_name(key))

    def _set(self, shares: dict[str, float], held: AbstractSet[str]) -> None:
        last = self._shares
        for key in last.keys() - shares.keys():
            if key in held:
                if key in self._series:
                    self._held.add(key)
            elif key in self._series:
                self._series.discard(key)
                _remove(JOB_SHARE, *_ns_name(key))
        for key, value in shares.items() - last.items():
            if key in self._series or len(self._series) < MAX_JOB_SERIES:
                JOB_SHARE.labels(*_ns_name(key)).set(value)
                self._series.add(key)
        self._shares = shares


def dominant_share(allocated: Mapping[str, float], total: Mapping[str, float]) -> float:
    """drf's share of a job from amounts by name (the plugin's own rule, plugins.shares.dominant_share)."""
    names = sorted(total.keys() | allocated.keys())
    return vector_share(
        np.array([allocated.get(name, 0.0) for name in names]), np.array([total.get(name, 0.0) for name in names])
    )


def _ns_name(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


_K = TypeVar("_K", tuple[str, str], tuple[str, str, str])
_V = TypeVar("_V", VGPUDeviceFigures, VGPUPodFigures)
# VGPUDeviceFigures' fields in order, each with its gauge.
_VGPU_DEVICE_GAUGES: Final = (VGPU_MEMORY_LIMIT, VGPU_SHARED, VGPU_MEMORY, VGPU_CORES)
_VGPU_POD_GAUGES: Final = (VGPU_POD_MEMORY, VGPU_POD_CORES)


@dataclass
class VGPURecorder:
    """volcano_vgpu_device_* from deviceshare's GPUs at session close: only the series whose figure moved
    are set, those of GPUs and pod holdings no longer there are removed; nothing to do while nothing
    changed, nor ever without vGPU sharing (both empty). At most MAX_VGPU_SERIES GPUs, and as many
    pod-GPU pairs, get series."""

    _devices: Mapping[tuple[str, str], VGPUDeviceFigures] = field(default_factory=dict)
    _pods: Mapping[tuple[str, str, str], VGPUPodFigures] = field(default_factory=dict)
    _device_series: set[tuple[str, str]] = field(default_factory=set)
    _pod_series: set[tuple[str, str, str]] = field(default_factory=set)

    def record(
        self,
        devices: Mapping[tuple[str, str], VGPUDeviceFigures],
        pods: Mapping[tuple[str, str, str], VGPUPodFigures],
    ) -> None:
        if devices != self._devices:
            _record_series(self._devices, devices, self._device_series, _VGPU_DEVICE_GAUGES)
            self._devices = devices
        if pods != self._pods:
            _record_series(self._pods, pods, self._pod_series, _VGPU_POD_GAUGES)
            self._pods = pods


def _record_series(last: Mapping[_K, _V], now: Mapping[_K, _V], series: set[_K], gauges: tuple[Gauge, ...]) -> None:
    """Set each gauge of `now`'s keys whose value moved from `last`, remove those of keys gone."""
    for key in last.keys() - now.keys():
        if key in series:
            series.discard(key)
            for gauge in gauges:
                _remove(gauge, *key)
    for key, figures in now.items():
        before = last.get(key) if key in series else None  # a key new to the series: all its gauges
        if figures == before or (before is None and len(series) >= MAX_VGPU_SERIES):
            continue
        series.add(key)
        for gauge, figure, old in zip(gauges, figures, before or (None,) * len(gauges), strict=True):
            if figure != old:
                gauge.labels(*key).set(figure)


def record_decisions(result: CycleResult) -> None:
    binds = len(result.binds)
    ATTEMPTS.labels("scheduled").inc(binds)
    ATTEMPTS.labels("unschedulable").inc(max(0, result.stats.tasks_pending - binds))
    evictions = [d.reason for d in result.decisions if isinstance(d, Evict)]
    victims = evictions.count("preempt")
    PREEMPTION_VICTIMS.set(victims)
    if victims:
        PREEMPTION_ATTEMPTS.inc()
    for action in set(evictions):
        EVICTIONS.labels(action).inc(evictions.count(action))


# Series whose labels are known before anything happens: present (0) from the start, so a dashboard
# shows 0 rather than "No data" until the first event.
DECLARED_LABELS: Final = (
    (ATTEMPTS, ("scheduled", "unschedulable")),
    (EVICTIONS, ("preempt", "reclaim")),
    (TASK_LATENCY, ("Bound",)),
    (STAGE, ("Predicate", "Scoring", "Bind")),
)


def declare_series(instance: str) -> None:
    """Create the series whose labels are known at start (this instance's among them), at 0."""
    for metric, values in DECLARED_LABELS:
        for value in values:
            metric.labels(value)
    for counter in (LEDGER_WRITES, LEDGER_RETRIES, ERRORS, CYCLE_ERRORS, FENCED):
        counter.labels(instance)
    for gauge in (OWNED, MEMBERS):
        gauge.labels(instance)
    for counter, outcomes in _INSTANCE_OUTCOMES:
        for outcome in outcomes:
            counter.labels(instance, outcome)
    LEDGER_CONFLICTS.labels(instance, "queue")


# -- state: queues ---------------------------------------------------------------------------------------
Amounts = dict[str, float]  # resource name -> amount (cpu in cores, memory in bytes, others in units)


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One queue as Volcano's proportion plugin sees it (the gauges scale the amounts as Volcano does)."""

    allocated: Amounts
    request: Amounts
    deserved: Amounts
    real_capability: Amounts  # min(capability, cluster - the other queues' guarantees)
    share: float
    overused: bool


@dataclass(frozen=True, slots=True)
class Tally:
    """One pass over the pods: per queue, what is placed and what is asked; per PodGroup, pods waiting;
    per namespace, what is placed; per queue, its tasks by status."""

    allocated: dict[str, Amounts]
    request: dict[str, Amounts]
    waiting: dict[str, int]
    namespaces: dict[str, Amounts] = field(default_factory=dict)
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)


def tally(snapshot: ClusterSnapshot, binds: Mapping[str, str]) -> Tally:
    """Allocated: the pods that occupy a node (bound or running, not leaving: cluster_index.is_placed)
    and the pending ones `binds` binds; request: allocated + the pending, unbound ones; waiting: per
    PodGroup, its pending pods not placed. Floats, not Fractions: this walks every pod (100k pods in a
    fraction of a second) and a gauge is a float anyway. Pods not in a PodGroup, or in one naming no
    known queue, count for no queue; those of a PodGroup not stored count for no namespace either (a
    session has no job for them)."""
    queue_of = {pg.key: pg.queue or DEFAULT_QUEUE for pg in snapshot.podgroups}
    allocated: dict[str, Amounts] = {q.name: {} for q in snapshot.queues}
    request: dict[str, Amounts] = {q.name: {} for q in snapshot.queues}
    waiting: dict[str, int] = {}
    namespaces: dict[str, Amounts] = {}
    statuses: dict[str, dict[str, int]] = {q.name: dict.fromkeys(TASK_STATUSES, 0) for q in snapshot.queues}
    for pod in snapshot.pods:
        group = pod.annotations.get(GROUP_NAME_ANNOTATION)
        if not group:
            continue
        key = f"{pod.namespace}/{group}"
        asked = is_asked(pod)
        bound = pod.key in binds
        placed = is_placed(pod) or (bound and asked)
        owner = queue_of.get(key)
        if owner in statuses:
            counts = statuses[owner]
            counts[task_status(pod.phase, pod.deleting, bool(pod.node_name) or bound)] += 1
        if not asked:
            continue
        if not placed:
            waiting[key] = waiting.get(key, 0) + 1
        elif owner is not None:
            _add(namespaces.setdefault(pod.namespace, {}), pod.requests)
        if owner is None or owner not in request:
            continue
        asked_amounts, held = request[owner], (allocated[owner] if placed else None)
        for name, value in pod.requests.items():
            if name != PODS:
                amount = value.numerator / value.denominator  # float(Fraction), without its detour
                asked_amounts[name] = asked_amounts.get(name, 0.0) + amount
                if held is not None:
                    held[name] = held.get(name, 0.0) + amount
    return Tally(allocated, request, waiting, namespaces, statuses)


def index_tally(index: ClusterIndex, queues: Iterable[str], binds: Mapping[str, str]) -> Tally:
    """`tally` from the index's per-PodGroup figures instead of every pod (read on the event loop): a walk
    over this instance's PodGroups and over this cycle's binds, which count as placed, and the other
    shards' records as their owners last wrote them (`waiting` is the own PodGroups' only)."""
    allocated: dict[str, Amounts] = {q: {} for q in queues}
    request: dict[str, Amounts] = {q: {} for q in allocated}
    statuses: dict[str, dict[str, int]] = {q: dict.fromkeys(TASK_STATUSES, 0) for q in allocated}
    waiting: dict[str, int] = {}
    namespaces: dict[str, Amounts] = {}
    queue_of: dict[str, str] = {}
    for group in index.gauge_groups():
        if group.waiting:
            waiting[group.key] = group.waiting
        if group.pg is None:
            continue  # (no queue: it counts nowhere, as in a session, which has no job for it)
        if group.placed:
            _add_floats(namespaces.setdefault(group.key.partition("/")[0], {}), group.allocated)
        queue = group.pg.queue or DEFAULT_QUEUE
        if queue not in statuses:
            continue
        queue_of[group.key] = queue
        counts = statuses[queue]
        for status, count in group.statuses.items():
            counts[status] += count
        _add_floats(request[queue], group.request)
        _add_floats(allocated[queue], group.allocated)
    for queue, totals in index.others.queues.items():
        for namespace, held in totals.namespaces.items():
            _add_floats(namespaces.setdefault(namespace, {}), held)
        if queue not in statuses:
            continue
        counts = statuses[queue]
        for status, count in totals.statuses.items():
            if status in counts:
                counts[status] += count
        _add_floats(request[queue], totals.request)
        _add_floats(allocated[queue], totals.allocated)
    for pod_key in binds:
        hit = index.pending(pod_key)
        if hit is None:
            continue
        key, amounts = hit
        left = waiting.get(key, 0) - 1
        if left > 0:
            waiting[key] = left
        else:
            waiting.pop(key, None)
        _add_floats(namespaces.setdefault(key.partition("/")[0], {}), amounts)
        owner = queue_of.get(key)
        if owner is not None:
            statuses[owner]["pending"] -= 1
            statuses[owner]["bound"] += 1
            _add_floats(allocated[owner], amounts)
    return Tally(allocated, request, waiting, namespaces, statuses)


def _add_floats(into: Amounts, amounts: Mapping[str, float]) -> None:
    for name, value in amounts.items():
        into[name] = into.get(name, 0.0) + value


def _add(into: Amounts, requests: Mapping[str, Fraction]) -> None:
    for name, value in requests.items():
        if name != PODS:
            into[name] = into.get(name, 0.0) + value.numerator / value.denominator


def namespace_shares(snapshot: ClusterSnapshot, placed: Mapping[str, Amounts]) -> dict[str, float]:
    """Per namespace with pods placed, its dominant share of the cluster: the largest, over resources,
    of what its pods hold over the cluster's allocatable (drf's share, by namespace)."""
    total: Amounts = {}
    for node in snapshot.nodes:
        _add(total, node.allocatable)
    return {
        namespace: max((amount / total[n] for n, amount in held.items() if total.get(n)), default=0.0)
        for namespace, held in placed.items()
    }


def queue_figures(snapshot: ClusterSnapshot, binds: Mapping[str, str] | None = None) -> dict[str, QueueFigures]:
    """Allocated and request (see `tally`) and deserved (Volcano's water-filling by weight over the
    cluster's allocatable, capped by real capability and request, floored at guarantee) per queue, with
    share = max over resources of allocated/deserved and overused = deserved <= allocated."""
    return figures_of(snapshot, tally(snapshot, binds or {}))


def figures_of(snapshot: ClusterSnapshot, counted: Tally) -> dict[str, QueueFigures]:
    allocated, request = counted.allocated, counted.request
    names = {n for node in snapshot.nodes for n in node.allocatable} | {n for r in request.values() for n in r}
    space = ResourceSpace.of(names - {PODS})
    total = (
        np.sum([space.vector(node.allocatable) for node in snapshot.nodes], axis=0) if snapshot.nodes else space.zeros()
    )
    guarantees = [space.vector(q.guarantee) for q in snapshot.queues]
    total_guarantee = np.sum(guarantees, axis=0) if guarantees else space.zeros()
    attrs: list[QueueAttr] = []
    for queue in snapshot.queues:
        info = QueueInfo(queue.name, queue.weight, queue)
        guarantee = space.vector(queue.guarantee)
        attr = QueueAttr(
            queue=info,
            allocated=space.vector(allocated[queue.name]),
            request=space.vector(request[queue.name]),
            reserved=space.zeros(),
            capability=capability_vector(space, info),
            guarantee=guarantee,
            deserved=space.zeros(),
            real_capability=space.zeros(),
        )
        attr.real_capability = np.minimum(np.clip(total - total_guarantee, 0, None) + guarantee, attr.capability)
        attrs.append(attr)
    water_fill(total, attrs, space.tolerance)
    figures = {}
    for attr in attrs:
        figures[attr.name] = QueueFigures(
            allocated=allocated[attr.name],
            request=request[attr.name],
            deserved={n: float(v) for n, v in zip(space.names, attr.deserved, strict=True) if v > 0},
            real_capability={
                n: float(v) for n, v in zip(space.names, attr.real_capability, strict=True) if np.isfinite(v)
            },
            share=share(attr.allocated, attr.deserved),
            overused=less_equal(attr.deserved, attr.allocated, space.tolerance),
        )
    return figures


def _milli(res: Mapping[str, Fraction] | Amounts, name: str) -> float:
    return float(res.get(name, 0)) * 1000


def _bytes(res: Mapping[str, Fraction] | Amounts) -> float:
    return float(res.get(MEMORY, 0))


def _scalars(res: Mapping[str, Fraction] | Amounts) -> dict[str, float]:
    """Volcano's scalar resources (GPUs and the like) are milli-units."""
    return {n: float(v) * 1000 for n, v in res.items() if n not in (CPU, MEMORY, PODS)}


# -- state: jobs -----------------------------------------------------------------------------------------
def unschedulable_jobs(result: CycleResult) -> list[str]:
    """The PodGroups (`ns/name`) this cycle reported unschedulable: their latest condition is an
    Unschedulable one that holds (the gang plugin's verdict at session close)."""
    out = []
    for key, update in result.podgroups.items():
        last = update.conditions[-1] if update.conditions else None
        if last is not None and last.type == "Unschedulable" and last.status == "True":
            out.append(update.podgroup or key)
    return sorted(out)


def _created_s(pg: PodGroupObj) -> float | None:
    try:
        return datetime.fromisoformat(pg.creation.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return None


@dataclass
class StateRecorder:
    """The state gauges, refreshed at most every `period_s` (see the module's doc), and the per-job
    scheduling time, taken every cycle. Keeps which series it set so those of queues and jobs that are
    gone are removed, and which jobs it has timed."""

    period_s: float = STATE_PERIOD_S
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    _due: float = float("-inf")
    _queues: dict[str, set[str]] = field(default_factory=dict)  # queue -> scalar names exported
    _unschedulable: set[str] = field(default_factory=set)
    # PodGroup key -> its series' labels; None: judged, not timed (Running before this instance saw it)
    _timed: dict[str, tuple[str, str, str] | None] = field(default_factory=dict)
    _retried: set[str] = field(default_factory=set)  # PodGroup keys with a volcano_job_retry_counts series
    _task_queues: set[str] = field(default_factory=set)  # queues with volcano_queue_session_start_task_count
    _namespaces: set[str] = field(default_factory=set)  # namespaces with volcano_namespace_* series
    _timed_lock: threading.Lock = field(default_factory=threading.Lock)  # the loop times, the worker forgets

    def record(self, result: CycleResult, cluster: Callable[[], ClusterSnapshot], *, whole: bool = True) -> bool:
        """Refresh from this cycle's result and the cluster when due; True if it did."""
        if not self.due():
            return False
        timed = self.timed()
        self.refresh(result, cluster(), timed, whole=whole)
        return True

    def due_now(self) -> bool:
        """Whether a refresh would be due now (without taking it)."""
        return self.clock() >= self._due

    def due(self) -> bool:
        """Whether a refresh is due now; if so, the next one is due a period later."""
        now = self.clock()
        if now < self._due:
            return False
        self._due = now + self.period_s
        return True

    def timed(self) -> set[str]:
        """The jobs judged so far (take it with the cluster's snapshot, for `refresh`)."""
        with self._timed_lock:
            return set(self._timed) | self._retried

    def refresh(
        self,
        result: CycleResult,
        snapshot: ClusterSnapshot,
        timed: set[str],
        *,
        whole: bool = True,
        counted: Tally | None = None,
        held_unschedulable: AbstractSet[str] = frozenset(),
    ) -> None:
        """The state gauges from this cycle's result and `snapshot` (safe in another thread). `whole`:
        `snapshot` is the whole cluster and this instance exports its gauges; otherwise it is the share
        the cycle planned, which holds every pod of the instance's PodGroups, and the whole cluster's
        series this instance exported before go. Of the jobs judged when the snapshot was taken
        (`timed`), those not in it are gone (or no longer this instance's): their series go. `counted`:
        the snapshot's tally taken already (index_tally), instead of a walk over its pods.
        `held_unschedulable`: the jobs held out of the sessions while they wait for their pods, which the
        last session that had them reported unschedulable (they count among the unschedulable jobs)."""
        if counted is None:
            counted = tally(snapshot, result.binds)
        if whole:
            self._record_queues(snapshot.queues, figures_of(snapshot, counted))
            self._record_tasks(counted.statuses)
            self._record_namespaces(namespace_shares(snapshot, counted.namespaces))
        else:
            self._record_queues((), {})
            self._record_tasks({})
            self._record_namespaces({})
        self._record_unschedulable(sorted([*unschedulable_jobs(result), *held_unschedulable]), counted.waiting)
        self._forget_jobs(timed - {pg.key for pg in snapshot.podgroups})

    def _record_queues(self, queues: Iterable[QueueObj], figures: Mapping[str, QueueFigures]) -> None:
        current = set()
        for queue in queues:
            fig = figures.get(queue.name)
            if fig is None:
                continue
            name = queue.name
            current.add(name)
            QUEUE_ALLOCATED_CPU.labels(name).set(_milli(fig.allocated, CPU))
            QUEUE_ALLOCATED_MEMORY.labels(name).set(_bytes(fig.allocated))
            QUEUE_REQUEST_CPU.labels(name).set(_milli(fig.request, CPU))
            QUEUE_REQUEST_MEMORY.labels(name).set(_bytes(fig.request))
            QUEUE_DESERVED_CPU.labels(name).set(_milli(fig.deserved, CPU))
            QUEUE_DESERVED_MEMORY.labels(name).set(_bytes(fig.deserved))
            QUEUE_CAPACITY_CPU.labels(name).set(_milli(queue.capability, CPU) if CPU in queue.capability else -1)
            QUEUE_CAPACITY_MEMORY.labels(name).set(_bytes(queue.capability) if MEMORY in queue.capability else -1)
            QUEUE_REAL_CAPACITY_CPU.labels(name).set(_milli(fig.real_capability, CPU))
            QUEUE_REAL_CAPACITY_MEMORY.labels(name).set(_bytes(fig.real_capability))
            QUEUE_WEIGHT.labels(name).set(queue.weight)
            QUEUE_SHARE.labels(name).set(fig.share)
            QUEUE_OVERUSED.labels(name).set(1 if fig.overused else 0)
            scalars = set()
            for gauge, res in (
                (QUEUE_ALLOCATED_SCALAR, fig.allocated),
                (QUEUE_REQUEST_SCALAR, fig.request),
                (QUEUE_DESERVED_SCALAR, fig.deserved),
                (QUEUE_CAPACITY_SCALAR, queue.capability),
                (QUEUE_REAL_CAPACITY_SCALAR, fig.real_capability),
            ):
                for resource, value in _scalars(res).items():
                    gauge.labels(name, resource).set(value)
                    scalars.add(resource)
            for resource in self._queues.get(name, set()) - scalars:
                for gauge in _SCALAR_GAUGES:
                    _remove(gauge, name, resource)
            self._queues[name] = scalars
        for name in set(self._queues) - current:
            for gauge in _QUEUE_GAUGES:
                _remove(gauge, name)
            for resource in self._queues.pop(name):
                for gauge in _SCALAR_GAUGES:
                    _remove(gauge, name, resource)

    def _record_tasks(self, statuses: Mapping[str, Mapping[str, int]]) -> None:
        for queue, counts in statuses.items():
            for status, count in counts.items():
                QUEUE_TASKS.labels(queue, status).set(count)
        for queue in self._task_queues - statuses.keys():
            for status in TASK_STATUSES:
                _remove(QUEUE_TASKS, queue, status)
        self._task_queues = set(statuses)

    def _record_namespaces(self, shares: Mapping[str, float]) -> None:
        for namespace, value in shares.items():
            NAMESPACE_SHARE.labels(namespace).set(value)
            NAMESPACE_WEIGHT.labels(namespace).set(NAMESPACE_WEIGHT_DEFAULT)
            NAMESPACE_WEIGHTED_SHARE.labels(namespace).set(value / NAMESPACE_WEIGHT_DEFAULT)
        for namespace in self._namespaces - shares.keys():
            for gauge in (NAMESPACE_SHARE, NAMESPACE_WEIGHT, NAMESPACE_WEIGHTED_SHARE):
                _remove(gauge, namespace)
        self._namespaces = set(shares)

    def _record_unschedulable(self, jobs: list[str], waiting: Mapping[str, int]) -> None:
        UNSCHEDULE_JOBS.set(len(jobs))
        current = set(jobs[:MAX_JOB_SERIES])
        for job in current:
            UNSCHEDULE_TASKS.labels(job).set(waiting.get(job, 0))
        for job in self._unschedulable - current:
            _remove(UNSCHEDULE_TASKS, job)
        self._unschedulable = current

    def record_job_times(self, result: CycleResult, planned: ClusterSnapshot) -> None:
        """Jobs this cycle made ready, timed from their creation (Volcano: creation to the last task
        assumed): the PodGroups the session closed as Running that the cycle's snapshot (`planned`) had
        in another phase. Each is timed once; a job Running before this instance saw it is not."""
        started = [
            u.podgroup for u in result.podgroups.values() if u.phase == "Running" and u.podgroup not in self._timed
        ]
        if not started:
            return
        now = self.wall()
        groups = {pg.key: pg for pg in planned.podgroups}
        with self._timed_lock:
            self._time_jobs(started, groups, now)

    def record_retries(self, result: CycleResult) -> None:
        """One retry more for each job the session's gang left unready (Volcano's RegisterJobRetries, by
        the job's name); the series goes when the job leaves the cluster (refresh)."""
        if not result.stats.retried_jobs:
            return
        with self._timed_lock:
            for key in result.stats.retried_jobs:
                if key in self._retried or len(self._retried) < MAX_JOB_SERIES:
                    JOB_RETRIES.labels(_ns_name(key)[1]).inc()
                    self._retried.add(key)

    def _time_jobs(self, started: list[str], groups: Mapping[str, PodGroupObj], now: float) -> None:
        for key in started:
            pg = groups.get(key)
            created = _created_s(pg) if pg is not None else None
            if pg is None:
                continue  # not in this cycle's view: judged when it is
            if pg.phase == "Running" or created is None or len(self._timed) >= MAX_JOB_SERIES:
                self._timed[key] = None  # remembered, so later cycles need not look it up again
                continue
            labels = (pg.name, pg.queue or DEFAULT_QUEUE, pg.namespace)
            elapsed_ms = max(0.0, now - created) * 1000
            JOB_E2E.observe(elapsed_ms)
            JOB_DURATION.labels(*labels).set(elapsed_ms)
            JOB_START.labels(*labels).set(int(created))
            self._timed[key] = labels

    def _forget_jobs(self, gone: set[str]) -> None:
        with self._timed_lock:
            series = [self._timed.pop(key, None) for key in gone]
            retried = gone & self._retried
            self._retried -= retried
        for key in retried:
            _remove(JOB_RETRIES, _ns_name(key)[1])
        for labels in series:
            if labels is not None:
                _remove(JOB_DURATION, *labels)
                _remove(JOB_START, *labels)


_QUEUE_GAUGES: Final = (
    QUEUE_ALLOCATED_CPU,
    QUEUE_ALLOCATED_MEMORY,
    QUEUE_REQUEST_CPU,
    QUEUE_REQUEST_MEMORY,
    QUEUE_DESERVED_CPU,
    QUEUE_DESERVED_MEMORY,
    QUEUE_CAPACITY_CPU,
    QUEUE_CAPACITY_MEMORY,
    QUEUE_REAL_CAPACITY_CPU,
    QUEUE_REAL_CAPACITY_MEMORY,
    QUEUE_WEIGHT,
    QUEUE_SHARE,
    QUEUE_OVERUSED,
)
_SCALAR_GAUGES: Final = (
    QUEUE_ALLOCATED_SCALAR,
    QUEUE_REQUEST_SCALAR,
    QUEUE_DESERVED_SCALAR,
    QUEUE_CAPACITY_SCALAR,
    QUEUE_REAL_CAPACITY_SCALAR,
)


def _remove(gauge: Gauge | BareCounter, *labels: str) -> None:
    try:
        gauge.remove(*labels)
    except KeyError:
        pass  # never set here


# The outcomes each instance-labelled counter counts (binder, evictor, status_writer).
_INSTANCE_OUTCOMES: Final = (
    (BINDS, ("ok", "conflict", "gone", "stale")),
    (EVICTS, ("ok", "stale")),
    (GANGS, ("ok", "partial", "conflict", "moved")),
    (LOANS, ("granted", "refused")),
    (SHARD_RECORDS, ("written", "failed")),
    (PG_WRITES, ("ok", "conflict")),
    (QUEUE_WRITES, ("ok", "conflict")),
)

_STATE = StateRecorder()
_SHARES = ShareRecorder()
_VGPU = VGPURecorder()
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metrics-state")
_refreshing: Future[None] | None = None


def record_cycle(
    result: CycleResult,
    planned: ClusterSnapshot,
    cluster: Callable[[], ClusterSnapshot],
    *,
    instance: str,
    owned: int,
    members: int,
    whole: bool = True,
    index: ClusterIndex | None = None,
    held: AbstractSet[str] = frozenset(),
) -> None:
    """Everything a cycle tells Prometheus (the loop's one call). `planned` is the snapshot the cycle ran
    on; `cluster` gives the whole cluster as the cache holds it, asked only when the state gauges are due
    (and no refresh is still running) and this instance exports the whole cluster's gauges (`whole`:
    see the module's doc); otherwise they come from `planned`. With the cache's `index`, the whole
    cluster is counted from its PodGroups' figures, not by a walk over every pod. `held`: the PodGroups
    held out of the sessions while settled (their job share series stay; those waiting for their pods
    count among the unschedulable jobs)."""
    global _refreshing
    record_timings(result)
    record_stages(result)
    record_decisions(result)
    _SHARES.record(result.stats.job_shares, held, result.stats.total, index.allocated_of if index is not None else None)
    _VGPU.record(result.stats.vgpu_devices, result.stats.vgpu_pods)
    _STATE.record_retries(result)
    OWNED.labels(instance).set(owned)
    MEMBERS.labels(instance).set(members)
    _STATE.record_job_times(result, planned)
    if (_refreshing is None or _refreshing.done()) and _STATE.due():
        timed = _STATE.timed()
        source = cluster() if whole else planned
        counted, waiting = None, frozenset(index.waiting) if index is not None else frozenset()
        if whole and index is not None:
            counted = index_tally(index, (q.name for q in source.queues), result.binds)
        _refreshing = _WORKER.submit(
            partial(_STATE.refresh, result, source, timed, whole=whole, counted=counted, held_unschedulable=waiting)
        )
        _refreshing.add_done_callback(_log_failure)


def state_gauges_due() -> bool:
    """Whether the next cycle would refresh the state gauges (their period is over)."""
    return _STATE.due_now()


def _log_failure(done: Future[None]) -> None:
    if not done.cancelled() and (exc := done.exception()) is not None:
        log.error("metrics.state_refresh_failed", error=repr(exc))

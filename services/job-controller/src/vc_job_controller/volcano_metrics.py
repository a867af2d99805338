"""The job controller's metrics under Volcano's controller-manager names (docs/design/metrics.md):
`volcano_controller_job_to_pod_creation_latency_milliseconds` (a job's creation to each of its pods
created) and `volcano_job_completed_phase_count` / `volcano_job_failed_phase_count` {job_name,
queue_name} (jobs reaching Completed or Failed).

The phase counts are Volcano counters without a `_total` suffix: BareCounters, so the series names
are Volcano's and their type is counter (what rate() needs).
"""

from __future__ import annotations

import contextlib
import time
from datetime import datetime
from typing import Final

from prometheus_client import Histogram

from vc_proto.batch import Job
from vc_runtime.bare_counter import BareCounter

JOB_TO_POD: Final = Histogram(
    "volcano_controller_job_to_pod_creation_latency_milliseconds",
    "Latency from VCJob creation to pod created in milliseconds",
    buckets=tuple(32 * 2**i for i in range(12)),
)
COMPLETED: Final = BareCounter(
    "volcano_job_completed_phase_count", "The number of job completed phase", ["job_name", "queue_name"]
)
FAILED: Final = BareCounter(
    "volcano_job_failed_phase_count", "The number of job failed phase", ["job_name", "queue_name"]
)


def _created_s(job: Job) -> float | None:
    text = job.metadata.creation_timestamp
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pods_created(job: Job, count: int, *, now: float | None = None) -> None:
    """`count` pods of `job` were just created."""
    created = _created_s(job)
    if created is None or count <= 0:
        return
    elapsed_ms = max(0.0, (time.time() if now is None else now) - created) * 1000
    for _ in range(count):
        JOB_TO_POD.observe(elapsed_ms)


def phase_written(before: Job, after: Job) -> None:
    """The job's status was written: count a move into Completed or Failed (once, as Volcano does)."""
    old = before.status.state.phase if before.status and before.status.state else None
    new = after.status.state.phase if after.status and after.status.state else None
    if new == old or new not in ("Completed", "Failed"):
        return
    queue = (after.spec.queue if after.spec else None) or "default"
    counter = COMPLETED if new == "Completed" else FAILED
    counter.labels(after.metadata.name or "", queue).inc()


def job_deleted(job: Job) -> None:
    """The job is gone: drop its phase-count series, as Volcano's controller does on delete, so the
    controller's memory and /metrics stay bounded by the live jobs, not by every job ever run."""
    labels = (job.metadata.name or "", (job.spec.queue if job.spec else None) or "default")
    for counter in (COMPLETED, FAILED):
        with contextlib.suppress(KeyError):  # never completed (or failed): no series
            counter.remove(*labels)

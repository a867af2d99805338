"""The job controller's Volcano-named metrics (vc_job_controller.volcano_metrics): job-to-pod creation
latency, and Completed/Failed phase counts by job and queue, counted once per move into the phase."""

from __future__ import annotations

from datetime import UTC, datetime

from prometheus_client import REGISTRY

from vc_job_controller import volcano_metrics
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, JobState, JobStatus
from vc_proto.meta import ObjectMeta

CREATED = "2027-01-15T08:00:00Z"


def job(phase: str | None, *, name: str = "vm-1", queue: str = "research") -> Job:
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(name=name, namespace="ns", creation_timestamp=CREATED),
        spec=JobSpec(queue=queue),
        status=JobStatus(state=JobState(phase=phase)) if phase else None,
    )


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_completed_and_failed_are_counted_once_per_move_into_the_phase() -> None:
    labels = {"job_name": "vm-1", "queue_name": "research"}
    before = sample("volcano_job_completed_phase_count", **labels)
    volcano_metrics.phase_written(job("Running"), job("Completing"))
    volcano_metrics.phase_written(job("Completing"), job("Completed"))
    volcano_metrics.phase_written(job("Completed"), job("Completed"))  # a later status write: not again
    assert sample("volcano_job_completed_phase_count", **labels) == before + 1
    failed = sample("volcano_job_failed_phase_count", job_name="vm-2", queue_name="default")
    volcano_metrics.phase_written(job("Running", name="vm-2", queue=""), job("Failed", name="vm-2", queue=""))
    assert sample("volcano_job_failed_phase_count", job_name="vm-2", queue_name="default") == failed + 1


def test_pod_creation_latency_is_from_the_jobs_creation_per_pod() -> None:
    count = sample("volcano_controller_job_to_pod_creation_latency_milliseconds_count")
    total = sample("volcano_controller_job_to_pod_creation_latency_milliseconds_sum")
    now = datetime(2027, 1, 15, 8, 0, 2, 500000, tzinfo=UTC).timestamp()
    volcano_metrics.pods_created(job(None), 3, now=now)
    volcano_metrics.pods_created(job(None), 0, now=now)
    assert sample("volcano_controller_job_to_pod_creation_latency_milliseconds_count") == count + 3
    assert sample("volcano_controller_job_to_pod_creation_latency_milliseconds_sum") == total + 3 * 2500


def test_a_deleted_jobs_series_goes_with_it() -> None:
    """A series per job name: kept after deletion, it grew the controller by every job ever run (the
    soak's job-controller memory growth)."""
    volcano_metrics.phase_written(job("Running", name="vm-gone"), job("Completed", name="vm-gone"))
    assert REGISTRY.get_sample_value(
        "volcano_job_completed_phase_count", {"job_name": "vm-gone", "queue_name": "research"}
    )
    volcano_metrics.job_deleted(job("Completed", name="vm-gone"))
    volcano_metrics.job_deleted(job("Running", name="vm-never-finished"))  # no series: nothing to drop
    assert (
        REGISTRY.get_sample_value(
            "volcano_job_completed_phase_count", {"job_name": "vm-gone", "queue_name": "research"}
        )
        is None
    )

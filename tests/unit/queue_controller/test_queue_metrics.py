"""The queue controller's gauges under Volcano's names and units: PodGroups by phase, and the inqueue
resources with scalar resources (GPUs) in milli-units as Volcano exports them; a queue forgotten here
is no longer exported."""

from __future__ import annotations

from fractions import Fraction

from prometheus_client import REGISTRY

from vc_queue_controller.logic.status import PodGroupCounts
from vc_queue_controller.metrics import QueueMetrics


def value(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_inqueue_figures_use_volcanos_units_and_go_with_the_queue() -> None:
    metrics = QueueMetrics()
    inqueue = {"cpu": Fraction(3, 2), "memory": Fraction(2**30), "nvidia.com/gpu": Fraction(2)}
    metrics.observe("qm-1", PodGroupCounts(inqueue=2, running=1), inqueue)
    assert value("volcano_queue_pod_group_inqueue_count", queue_name="qm-1") == 2
    assert value("volcano_queue_pod_group_running_count", queue_name="qm-1") == 1
    assert value("volcano_queue_inqueue_milli_cpu", queue_name="qm-1") == 1500
    assert value("volcano_queue_inqueue_memory_bytes", queue_name="qm-1") == 2**30
    assert value("volcano_queue_inqueue_scalar_resources", queue_name="qm-1", resource="nvidia.com/gpu") == 2000
    metrics.observe("qm-1", PodGroupCounts(), {"cpu": Fraction(1)})  # the GPUs are no longer asked for
    assert value("volcano_queue_inqueue_scalar_resources", queue_name="qm-1", resource="nvidia.com/gpu") is None
    metrics.forget("qm-1")
    assert value("volcano_queue_pod_group_inqueue_count", queue_name="qm-1") is None
    assert value("volcano_queue_inqueue_milli_cpu", queue_name="qm-1") is None


def test_quota_keys_of_min_resources_are_no_scalar_resource() -> None:
    """A vcjob's minResources carries Kubernetes quota keys beside the resources; only the resources are
    exported (`requests.memory` of 32 GiB is the memory, not a scalar resource of 3.4e13 milli-units)."""
    metrics = QueueMetrics()
    inqueue = {
        "requests.cpu": Fraction(4),
        "requests.memory": Fraction(32 * 2**30),
        "limits.memory": Fraction(32 * 2**30),
        "count/pods": Fraction(4),
        "pods": Fraction(4),
        "nvidia.com/gpu": Fraction(8),
    }
    metrics.observe("qm-2", PodGroupCounts(inqueue=1), inqueue)
    exported = {
        s.labels["resource"]
        for family in REGISTRY.collect()
        if family.name == "volcano_queue_inqueue_scalar_resources"
        for s in family.samples
        if s.labels.get("queue_name") == "qm-2"
    }
    assert exported == {"nvidia.com/gpu"}
    assert value("volcano_queue_inqueue_milli_cpu", queue_name="qm-2") == 4000
    assert value("volcano_queue_inqueue_memory_bytes", queue_name="qm-2") == 32 * 2**30
    metrics.forget("qm-2")

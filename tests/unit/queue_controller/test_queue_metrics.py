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

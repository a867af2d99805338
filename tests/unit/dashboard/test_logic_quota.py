"""Quota bars: allocated vs admitted vs deserved vs capability per resource, from a Queue alone."""

from __future__ import annotations

from fractions import Fraction

from tests.unit.dashboard.dashboard_builders import queue
from vc_dashboard.logic.amounts import human
from vc_dashboard.logic.quota import queue_order, queue_row, quota_bars


def test_bars_show_allocated_admitted_deserved_and_capability_per_resource() -> None:
    q = queue(
        "research",
        spec={
            "weight": 2,
            "capability": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8"},
            "deserved": {"cpu": "32"},
        },
        status={
            "state": "Open",
            "allocated": {"cpu": "16", "memory": "64Gi", "pods": "5"},
            "inqueueResources": {"cpu": "8"},
        },
    )
    bars = {bar.resource: bar for bar in quota_bars(q)}
    assert list(bars) == ["cpu", "memory", "nvidia.com/gpu"]  # pods is not a quota bar
    cpu = bars["cpu"]
    assert (cpu.allocated, cpu.inqueue, cpu.deserved, cpu.capability) == (16, 8, 32, 64)
    assert (cpu.allocated_pct, cpu.inqueue_pct, cpu.deserved_pct, cpu.capability_pct) == (25.0, 12.5, 50.0, 100.0)
    assert cpu.label == "16 allocated / 8 admitted / 32 deserved / 64 capability"
    gpu = bars["nvidia.com/gpu"]
    assert gpu.allocated == 0 and gpu.allocated_pct == 0.0 and gpu.deserved_pct is None
    assert bars["memory"].label == "64Gi allocated / 256Gi capability"


def test_over_deserved_is_flagged_and_the_bar_widens_to_the_largest_mark() -> None:
    q = queue("busy", spec={"deserved": {"cpu": "4"}}, status={"allocated": {"cpu": "10"}})
    (cpu,) = quota_bars(q)
    assert cpu.over_deserved and cpu.scale == 10 and cpu.allocated_pct == 100.0 and cpu.deserved_pct == 40.0


def test_without_a_capability_the_cluster_sets_the_width() -> None:
    q = queue("default", status={"allocated": {"cpu": "8"}})
    (alone,) = quota_bars(q)
    assert alone.allocated_pct == 100.0 and alone.label == "8 allocated / no capability"
    (scaled,) = quota_bars(q, {"cpu": Fraction(128)})
    assert scaled.allocated_pct == 6.25 and scaled.label == "8 allocated / no capability (cluster 128)"


def test_a_quantity_that_does_not_parse_is_left_out_not_fatal() -> None:
    q = queue("odd", spec={"capability": {"cpu": "lots"}}, status={"allocated": {"cpu": "2"}})
    (cpu,) = quota_bars(q)
    assert cpu.capability is None and cpu.allocated == 2


def test_a_queue_row_carries_state_weight_and_podgroup_counts() -> None:
    q = queue(
        "team",
        spec={"weight": 3, "parent": "root", "reclaimable": False},
        status={"state": "Closed", "pending": 2, "inqueue": 1, "running": 4},
    )
    row = queue_row(q)
    assert (row.name, row.state, row.weight, row.parent, row.reclaimable) == ("team", "Closed", 3, "root", False)
    assert (row.pending, row.inqueue, row.running, row.completed) == (2, 1, 4, 0)
    assert row.bars == []


def test_root_comes_first_then_names() -> None:
    names = [q.metadata.name for q in sorted([queue("b"), queue("root"), queue("a")], key=queue_order)]
    assert names == ["root", "a", "b"]


def test_amounts_read_as_people_write_them() -> None:
    assert human("cpu", Fraction(1, 2)) == "0.5"  # cores, not Kubernetes' milli-units
    assert human("cpu", Fraction(1, 1000)) == "0.001" and human("nvidia.com/gpu", Fraction(84, 10)) == "8.4"
    assert human("cpu", Fraction(17, 2)) == "8.5"
    assert human("memory", Fraction(3 * 2**29)) == "1.5Gi"
    assert human("memory", Fraction(2**40)) == "1Ti"
    assert human("nvidia.com/gpu", Fraction(0)) == "0"


def test_quota_keys_are_no_bars_and_requests_stand_for_their_resource() -> None:
    """What vcjobs' minResources put in inqueueResources: requests.memory is memory (shown in Gi), and
    limits.*, count/pods and pods are no resource a queue holds (each was drawn as a bar, in bytes)."""
    admitted = {
        "requests.cpu": "4",
        "requests.memory": "32Gi",
        "limits.cpu": "4",
        "limits.memory": "32Gi",
        "count/pods": "4",
        "pods": "4",
        "nvidia.com/gpu": "2",
    }
    bars = quota_bars(queue("q", status={"state": "Open", "inqueueResources": admitted}))
    assert [b.resource for b in bars] == ["cpu", "memory", "nvidia.com/gpu"]
    memory = next(b for b in bars if b.resource == "memory")
    assert human("memory", memory.inqueue) == "32Gi"

"""Reading a service's /metrics text (benchmarks/services.py), over a made-up exposition."""

from __future__ import annotations

from benchmarks.services import metric_by_label, metric_declared, metric_sum

METRICS = """\
# HELP tephra_scheduler_gang_commits_total Gang commits by outcome
# TYPE tephra_scheduler_gang_commits_total counter
tephra_scheduler_gang_commits_total{instance="scheduler-0",outcome="ok"} 480.0
tephra_scheduler_gang_commits_total{instance="scheduler-0",outcome="conflict"} 20.0
tephra_scheduler_gang_commits_total{instance="scheduler-1",outcome="ok"} 5.0
# HELP tephra_scheduler_foreign_node_binds_total Binds onto nodes another instance owns
# TYPE tephra_scheduler_foreign_node_binds_total counter
# HELP volcano_e2e_scheduling_latency_milliseconds E2e scheduling latency
# TYPE volcano_e2e_scheduling_latency_milliseconds histogram
volcano_e2e_scheduling_latency_milliseconds_count 12.0
"""


def test_a_metric_is_summed_over_its_labels_or_those_matching() -> None:
    assert metric_sum(METRICS, "tephra_scheduler_gang_commits_total") == 505.0
    assert metric_sum(METRICS, "tephra_scheduler_gang_commits_total", 'outcome="conflict"') == 20.0
    assert metric_sum(METRICS, "volcano_e2e_scheduling_latency_milliseconds_count") == 12.0


def test_a_declared_counter_without_samples_is_told_from_an_absent_one() -> None:
    assert metric_declared(METRICS, "tephra_scheduler_foreign_node_binds_total")
    assert metric_sum(METRICS, "tephra_scheduler_foreign_node_binds_total") == 0.0
    assert not metric_declared(METRICS, "tephra_scheduler_stolen_nodes_total")
    assert not metric_declared("", "tephra_scheduler_foreign_node_binds_total")


def test_a_metric_is_summed_by_the_values_of_one_label() -> None:
    by_outcome = metric_by_label(METRICS, "tephra_scheduler_gang_commits_total", "outcome")
    assert by_outcome == {"ok": 485.0, "conflict": 20.0}
    assert metric_by_label(METRICS, "tephra_scheduler_gang_commits_total", "instance") == {
        "scheduler-0": 500.0,
        "scheduler-1": 5.0,
    }
    assert metric_by_label(METRICS, "volcano_e2e_scheduling_latency_milliseconds_count", "outcome") == {}

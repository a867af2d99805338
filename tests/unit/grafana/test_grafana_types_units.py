"""deploy/grafana against what the services expose, by type and unit: rate() only over series that only
go up (counters, histograms' buckets), each panel plotting one unit in the panel's unit, Volcano's
counters exposed as counters, and every series whose labels are known at start present from the start."""

from __future__ import annotations

from prometheus_client import REGISTRY
from prometheus_client.metrics import MetricWrapperBase

from tests.unit.grafana.grafana_queries import (
    PANEL_UNITS,
    dashboard_queries,
    names_in,
    panels,
    rated_names,
    series_types,
    target_unit,
)
from tests.unit.grafana.test_grafana_dashboards import registry_series
from vc_runtime.bare_counter import BareCounter, exposition

# Labels whose values come from what users create (queues, jobs, namespaces, GPUs) or from what happens
# (a decode error's source): their series can only appear with them.
STATE_LABELS = frozenset(
    {
        "queue_name", "resource", "job_id", "job_ns", "job_name", "queue", "job_namespace", "namespace_name",
        "devID", "NodeName", "podName", "source", "kind", "rule", "name", "component", "op", "owner_kind",
        "action", "plugin", "OnSession", "view", "code", "reason", "step",
    }
)  # fmt: skip


def _types() -> dict[str, str]:
    registry_series()  # imports every metrics module
    return series_types(REGISTRY.collect())


def test_rate_is_taken_only_of_series_that_only_go_up() -> None:
    types = _types()
    wrong = {
        f"{q.dashboard} / {q.panel}: {name} is a {types.get(name)}"
        for q in dashboard_queries()
        for name in rated_names(q.expr)
        if types.get(name) != "rateable"
    }
    assert wrong == set()


def test_each_panel_plots_one_unit_in_the_panels_unit() -> None:
    mixed = []
    for board, panel in panels():
        units = {target_unit(t["expr"]) for t in panel["targets"]}
        shown = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if len(units) != 1 or shown not in PANEL_UNITS[next(iter(units))]:
            mixed.append(f"{board} / {panel['title']}: {sorted(units)} in {shown}")
    assert mixed == []


def test_volcanos_counters_are_counters_under_volcanos_names() -> None:
    types = _types()
    for name in (
        "volcano_total_preemption_attempts",
        "volcano_job_retry_counts",
        "volcano_job_completed_phase_count",
        "volcano_job_failed_phase_count",
        "volcano_eviction_transactions_total",
    ):
        assert types.get(name) == "rateable", name
    text = exposition(REGISTRY).decode()
    assert "# TYPE volcano_total_preemption_attempts counter\n" in text
    assert "volcano_total_preemption_attempts_total" not in text
    for name in ("volcano_namespace_share", "volcano_namespace_weight", "volcano_queue_session_start_task_count"):
        assert types.get(name) == "gauge", name


def test_every_series_whose_labels_are_known_is_there_from_the_start() -> None:
    from vc_scheduler.metrics import declare_series

    registry_series()
    declare_series("scheduler-0")
    queried = {name for q in dashboard_queries() for name in names_in(q)}
    empty = []
    for family in REGISTRY.collect():
        collector = REGISTRY._names_to_collectors.get(family.name) or REGISTRY._names_to_collectors.get(
            family.name + "_total"
        )
        if not isinstance(collector, MetricWrapperBase | BareCounter):
            continue  # a collector of its own (work queues): its series come with the objects it reports
        labels = set(getattr(collector, "_labelnames", None) or getattr(collector, "labelnames", ()))
        if labels & STATE_LABELS or not any(n.startswith(family.name) for n in queried):
            continue
        if not [s for s in family.samples if not s.name.endswith("_created")]:
            empty.append(family.name)
    assert empty == []

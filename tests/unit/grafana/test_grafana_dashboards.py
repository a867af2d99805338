"""deploy/grafana and deploy/prometheus, static: every dashboard query names series some Tephra service
really exports (its metric definitions, imported and read from prometheus_client's registry), the
dashboards are well-formed, and the scrape configurations label what the dashboards group by.

The integration twin (tests/integration/test_dashboard_grafana_scrape.py) checks the same names against
real scrapes of every running service.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import yaml
from prometheus_client import REGISTRY

from tests.unit.grafana.grafana_queries import (
    DASHBOARDS,
    ROOT,
    Query,
    dashboard_queries,
    exported_series,
    metric_modules,
    metric_names,
    names_in,
)
from vc_cli.up import METRICS_PORT_ORDER, metrics_port

PROMETHEUS = ROOT / "deploy" / "prometheus"
GRAFANA = ROOT / "deploy" / "grafana"


def registry_series() -> set[str]:
    modules = metric_modules(ROOT / "libs", ROOT / "services")
    assert any(m.startswith("vc_scheduler.") for m in modules)  # the walk found the scheduler's metrics
    for module in modules:
        importlib.import_module(module)
    return exported_series(REGISTRY.collect())


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        pytest.param('volcano_queue_weight{queue_name=~"$queue"}', {"volcano_queue_weight"}, id="selector"),
        pytest.param(
            "histogram_quantile(0.99, sum by (le, action) "
            "(rate(volcano_action_scheduling_latency_milliseconds_bucket[$__rate_interval])))",
            {"volcano_action_scheduling_latency_milliseconds_bucket"},
            id="quantile-by-le",
        ),
        pytest.param(
            'a_total{x="by (y)"} / on(instance) group_left(node) b_info offset 5m unless c > bool 2^30 * 1e3',
            {"a_total", "b_info", "c"},
            id="operators-and-modifiers",
        ),
        pytest.param("max_over_time(rate(x_total[5m])[1h:1m])", {"x_total"}, id="subquery"),
        pytest.param("sum(up) without (job) > ${threshold}", {"up"}, id="variables"),
    ],
)
def test_metric_names_are_read_from_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_every_dashboard_query_names_series_a_service_exports() -> None:
    queries = dashboard_queries()
    assert len({q.dashboard for q in queries}) >= 3 and len(queries) > 30  # the walk found the panels
    exported = registry_series()
    missing: dict[str, list[str]] = {}
    for query in queries:
        names = names_in(query)
        assert names, f"{query.dashboard} / {query.panel}: no metric in {query.expr!r}"
        for name in sorted(names - exported):
            missing.setdefault(name, []).append(f"{query.dashboard} / {query.panel}")
    assert missing == {}, "dashboard queries naming series no service exports"


def test_a_name_nobody_exports_is_caught(tmp_path: Path) -> None:
    board = {
        "panels": [{"type": "row", "panels": [{"title": "new", "targets": [{"expr": "rate(volcano_nope_total[1m])"}]}]}]
    }
    (tmp_path / "x.json").write_text(json.dumps(board))
    (query,) = dashboard_queries(tmp_path)
    assert query == Query("x.json", "new", "rate(volcano_nope_total[1m])")
    assert names_in(query) - registry_series() == {"volcano_nope_total"}


@pytest.mark.parametrize("path", sorted(DASHBOARDS.glob("*.json")), ids=lambda p: p.name)
def test_each_dashboard_is_well_formed(path: Path) -> None:
    board = json.loads(path.read_text())
    assert board["uid"] == path.stem and board["title"].startswith("Tephra / ")
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["w"] > 0 and grid["h"] > 0, panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
    variables = {v["name"] for v in board["templating"]["list"]}
    assert "datasource" in variables
    used = {
        name
        for panel in board["panels"]
        for t in panel.get("targets", [])
        for name in variables
        if f"${name}" in t["expr"]
    }
    assert used <= variables


def test_the_uids_are_unique() -> None:
    uids = [json.loads(p.read_text())["uid"] for p in DASHBOARDS.glob("*.json")]
    assert len(uids) == len(set(uids)) == 3


def test_both_scrape_configurations_label_the_component_the_dashboards_group_by() -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "tephra")
    relabels = {r.get("target_label"): r for r in job["relabel_configs"]}
    assert relabels[None]["regex"] == "probes" and relabels[None]["action"] == "keep"
    assert relabels["component"]["source_labels"] == ["__meta_kubernetes_pod_label_app_kubernetes_io_name"]
    monitor = yaml.safe_load((PROMETHEUS / "servicemonitor.yaml").read_text())
    (endpoint,) = monitor["spec"]["endpoints"]
    assert {r["targetLabel"]: r["sourceLabels"] for r in endpoint["relabelings"]}["component"] == [
        "__meta_kubernetes_pod_label_app_kubernetes_io_name"
    ]
    controllers = json.loads((DASHBOARDS / "tephra-controllers.json").read_text())
    assert any("component" in t["expr"] for p in controllers["panels"] for t in p.get("targets", []))


def test_the_embedded_scrape_job_has_every_service_on_its_fixed_port() -> None:
    """`vcctl up --metrics-port-base 19100`: each target's port is the one vcctl up gives that service."""
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "tephra-embedded")
    ports = {}
    for static in job["static_configs"]:
        (target,) = static["targets"]
        assert static["labels"]["component"]  # what the dashboards group by
        ports[static["labels"]["service"]] = int(target.rpartition(":")[2])
    assert set(ports) == {*METRICS_PORT_ORDER, "scheduler-0"}
    assert ports == {name: metrics_port(19100, name) for name in ports}


def test_the_service_monitor_selects_the_metrics_service_and_every_deployments_probes_port() -> None:
    service = yaml.safe_load((PROMETHEUS / "metrics-service.yaml").read_text())
    monitor = yaml.safe_load((PROMETHEUS / "servicemonitor.yaml").read_text())
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    (port,) = service["spec"]["ports"]
    assert monitor["spec"]["endpoints"][0]["port"] == port["name"] and port["targetPort"] == "probes"
    kustomization = yaml.safe_load((PROMETHEUS / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(
        p.name for p in PROMETHEUS.glob("*.yaml") if p.name != "kustomization.yaml"
    )
    deployments = [
        doc
        for path in sorted((ROOT / "deploy" / "k8s" / "base").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc.get("kind") == "Deployment"
    ]
    assert len(deployments) >= 8
    for deployment in deployments:
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items(), deployment["metadata"]["name"]
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert "probes" in {p["name"] for p in container["ports"]}, deployment["metadata"]["name"]


def test_grafana_provisioning_points_at_the_dashboards() -> None:
    providers = yaml.safe_load((GRAFANA / "provisioning" / "dashboards.yaml").read_text())["providers"]
    assert providers[0]["type"] == "file" and providers[0]["options"]["path"].endswith("/tephra")
    sources = yaml.safe_load((GRAFANA / "provisioning" / "datasources.yaml").read_text())["datasources"]
    assert sources[0]["type"] == "prometheus"

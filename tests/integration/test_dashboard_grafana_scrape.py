"""A scrape of every running service (the embedded system, vc-dashboard included) contains every
series the Grafana dashboards in deploy/grafana query (the static twin is
tests/unit/grafana/test_grafana_dashboards.py, over the metric definitions)."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.services import ServiceProcess
from tests.support.system import seed, start_system
from tests.unit.grafana.grafana_queries import dashboard_queries, exported_series, names_in, series_in_text

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


async def test_every_series_the_dashboards_query_is_in_a_scrape_of_the_services(tmp_path: Path) -> None:
    system = await start_system(tmp_path)
    dashboard = ServiceProcess("vc-dashboard", system.url, ["--http-port", "0"], tmp_path / "dashboard.log")
    try:
        dashboard.start()
        await dashboard.wait_ready(timeout=60)
        await system.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "2s"}))
        await system.wait_phase("tensorflow-benchmark", "Completed", timeout=90)
        scraped: dict[str, set[str]] = {}
        texts: dict[str, str] = {}
        for name, service in {**system.services, "dashboard": dashboard}.items():
            texts[name] = scrape(service.health_port)
            scraped[name] = exported_series(text_string_to_metric_families(texts[name])) | series_in_text(texts[name])
        # Not only declared: the scheduler timed its plugins per OnSession, its queues and the job's
        # scheduling, and the job controller reports its work queue.
        values = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(texts["scheduler"] + texts["job-controller"])
            for sample in family.samples
        }
        gang_open = (("OnSession", "OnSessionOpen"), ("plugin", "gang"))
        assert values[("volcano_plugin_scheduling_latency_milliseconds_count", gang_open)] > 0
        assert values[("volcano_queue_weight", (("queue_name", "default"),))] == 1
        assert values[("volcano_e2e_job_scheduling_latency_milliseconds_count", ())] >= 1
        assert ("workqueue_depth", (("name", "jobs"),)) in values
        # Volcano's per-task stages: the job's tasks were searched, scored and bound.
        for stage in ("Predicate", "Scoring", "Bind"):
            assert values[("volcano_scheduling_stage_duration_milliseconds_count", (("stage", stage),))] > 0
        assert {"volcano_job_share", "volcano_job_retry_counts"} <= {
            family.name for family in text_string_to_metric_families(texts["scheduler"])
        }
        assert "tephra_dashboard_streams" in scraped["dashboard"]
        every = set().union(*scraped.values())
        wanted = {name for query in dashboard_queries() for name in names_in(query)}
        assert wanted and wanted <= every, sorted(wanted - every)
        volcano = {name for name in wanted if name.startswith("volcano_")}
        assert volcano and volcano <= scraped["scheduler"] | scraped["queue-controller"] | scraped["job-controller"]
    finally:
        dashboard.stop_quietly()
        system.stop()

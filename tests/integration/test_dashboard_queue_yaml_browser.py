"""The dashboard's queue page and YAML view in a real headless Chromium against the running system:
the queue page shows the hierarchy, limits per resource and the queue's jobs with why they wait; a
job's page links its PodGroup's YAML, read-only. Neither page keeps a live stream open, so a browser
waiting for the page to settle returns. Screenshots go to .artifacts/dashboard/."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_dashboard_browser import (  # noqa: F401 - fixtures used by name
    BLOCKED,
    JOB,
    blocked_job,
    browser,
    dashboard,
    log_in,
    screenshot,
    wait_for,
)
from tests.support.system import System, seed
from vc_proto.scheduling import PodGroup


def reload_until(driver: Any, url: str, css: str, contains: str) -> str:
    """The page has no live stream: load it again until the element says `contains` (the verdict comes
    with the scheduler's next cycles)."""
    from selenium.webdriver.support.ui import WebDriverWait

    script = "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;"

    def found(d: Any) -> str | None:
        d.get(url)
        text = d.execute_script(script, css)
        return text if text and contains in text else None

    return str(WebDriverWait(driver, 90, poll_frequency=1).until(found, f"{css} never said {contains!r}"))


pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


async def test_the_queue_page_and_the_yaml_view(browser: Any, dashboard: tuple[System, str]) -> None:  # noqa: F811
    system, base = dashboard
    created = system.vcctl("queue", "create", "-N", "research", "-w", "2", "--capability", "cpu=8,nvidia.com/gpu=8")
    assert created.returncode == 0, created.stderr
    await system.apply(blocked_job())  # 12 CPUs in a queue capped at 8: waits, and says why

    log_in(browser, base)
    browser.get(f"{base}/queues")
    wait_for(browser, 'tr[data-queue="research"] a.details', "the queues page links the queue's page")
    browser.get(f"{base}/queues/research")
    assert browser.execute_script("return document.readyState") == "complete"  # settled: no stream held open
    wait_for(browser, "p.lineage", "the queue page shows where it sits", contains="root")
    wait_for(browser, 'table.limits tr[data-resource="cpu"]', "the cpu row shows its capability", contains="8")
    why = reload_until(browser, f"{base}/queues/research", f'tr[data-job="default/{BLOCKED}"] td.verdict', "capability")
    assert why.startswith('Queue "research"\'s capability is 8 cpu and the job needs 12 cpu')
    screenshot(browser, "queue-page")

    browser.get(f"{base}/yaml/job/default/{BLOCKED}")
    wait_for(browser, "pre#yaml", "the job's YAML", contains="kind: Job")
    groups, _ = await system.store_call(lambda s: s.list(PodGroup, "default"))
    (group,) = [g.metadata.name for g in groups if (g.metadata.name or "").startswith(BLOCKED)]
    browser.get(f"{base}/yaml/podgroup/default/{group}")
    text = wait_for(browser, "pre#yaml", "the PodGroup's YAML", contains="kind: PodGroup")
    assert "minMember: 2" in text and "queue: research" in text
    screenshot(browser, "yaml-view")
    browser.get(f"{base}/yaml/queue/research")
    wait_for(browser, "pre#yaml", "the queue's YAML", contains="capability:")
    browser.get(f"{base}/yaml/secret/default/x")
    wait_for(browser, "h1", "an unknown kind is refused", contains="404")

    # A job's page: the timeline has a legend and a time axis; its PodGroup, pods and nodes are links.
    await system.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "1h"}))
    await system.wait_phase(JOB, "Running", timeout=90)
    browser.get(f"{base}/jobs/default/{JOB}")
    wait_for(browser, "table.timeline tr.lane-pod", "the job page draws its timeline")
    key = wait_for(browser, "#timeline-key", "the timeline's legend", contains="Running")
    assert "Pending" in key and "failed or evicted" in key
    wait_for(browser, "table.timeline tr.axis text.tick", "the timeline's time axis", contains="0s")
    wait_for(browser, "a.podgroup", "the PodGroup links its YAML", attribute="href", contains="/yaml/podgroup/default/")
    wait_for(browser, "table.pods a.node", "a pod's node links its page", attribute="href", contains="/nodes/node-")
    screenshot(browser, "job-timeline")

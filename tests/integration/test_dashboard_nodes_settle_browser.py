"""The dashboard in a real headless Chromium: a node's page lists the pods on it with links to their
jobs; the root queue's row counts what its children run; and every live page settles, as a browser
waiting for "network idle" needs (Playwright's `wait_until="networkidle"`: no request in flight for
500 ms), yet still opens its live stream afterwards.

Network idleness is read from Chromium's own DevTools events (chromedriver's performance log): every
request the page starts and ends, with the browser's timestamps, so the verdict does not depend on how
fast this test polls on a loaded machine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.integration.test_dashboard_browser import (  # noqa: F401 - fixtures used by name
    JOB,
    WAIT_S,
    chromium,
    dashboard,
    log_in,
    screenshot,
    wait_for,
)
from tests.support.system import System, seed
from vc_proto.core import Pod

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

QUIET_S: Final = 0.5  # Playwright's networkidle: no request in flight for this long
LIVE_PAGES: Final = ("/", "/queues", "/jobs", "/nodes", f"/jobs/default/{JOB}")


@pytest.fixture
def network_browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path / "chromium-profile", network_log=True) as driver:
        yield driver


def devtools_events(driver: Any) -> list[dict[str, Any]]:
    """The DevTools events logged since the last call (each read empties the log)."""
    return [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]


def quiet_window_after_load(events: list[dict[str, Any]]) -> float:
    """The longest stretch after the load event with no request in flight, in seconds (as the browser
    timed it); a request still open when the events end keeps the page busy to the end."""
    load = next(e["params"]["timestamp"] for e in events if e["method"] == "Page.loadEventFired")
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    for e in events:
        params = e.get("params", {})
        if e["method"] == "Network.requestWillBeSent":
            started.setdefault(params["requestId"], params["timestamp"])
        elif e["method"] in ("Network.loadingFinished", "Network.loadingFailed"):
            ended[params["requestId"]] = params["timestamp"]
    last = max([load, *started.values(), *ended.values()])
    changes = sorted(
        [(t, +1) for t in started.values()] + [(ended[r], -1) for r in started if r in ended],
    )
    in_flight, quiet_since, longest = 0, None, 0.0
    for at, step in changes:
        if in_flight == 0 and quiet_since is not None and at > load:
            longest = max(longest, at - max(quiet_since, load))
        in_flight += step
        quiet_since = at if in_flight == 0 else None
    if in_flight == 0 and quiet_since is not None:
        longest = max(longest, last - max(quiet_since, load))
    return longest


def load_and_settle(driver: Any, url: str) -> float:
    """Load `url` and wait until its live stream has opened; the quiet window the page left first."""
    from selenium.webdriver.support.ui import WebDriverWait

    devtools_events(driver)  # what the previous page left in the log
    driver.get(url)
    seen: list[dict[str, Any]] = []

    def stream_opened(d: Any) -> bool:
        seen.extend(devtools_events(d))
        return any(
            e["method"] == "Network.requestWillBeSent" and "/stream" in e["params"]["request"]["url"] for e in seen
        ) and any(e["method"] == "Page.loadEventFired" for e in seen)

    WebDriverWait(driver, WAIT_S, poll_frequency=0.2).until(stream_opened, f"{url} never opened its live stream")
    return quiet_window_after_load(seen)


async def test_node_pages_root_counts_and_pages_that_settle(
    network_browser: Any,
    dashboard: tuple[System, str],  # noqa: F811
) -> None:
    driver = network_browser
    system, base = dashboard
    log_in(driver, base)
    await system.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "1h"}))
    await system.wait_phase(JOB, "Running", timeout=90)
    pods, _ = await system.store_call(lambda s: s.list(Pod, "default"))
    node = next(p.spec.node_name for p in pods if p.metadata.name == f"{JOB}-ps-0" and p.spec)
    assert node

    # The nodes list links each node's page; the page lists the pods on it, each linking its job.
    driver.get(f"{base}/nodes")
    wait_for(driver, f'tr[data-node="{node}"] a', "the nodes list links the node", attribute="href", contains=node)
    driver.get(f"{base}/nodes/{node}")
    row = f'table.node-pods tr[data-pod="default/{JOB}-ps-0"]'
    wait_for(driver, f"{row} td.job a", "the pod links its job", attribute="href", contains=f"/jobs/default/{JOB}")
    wait_for(driver, row, "the pod's requests in units", contains="cpu 1")
    wait_for(driver, "section.totals", "the node's allocation", contains="requested / allocatable")
    wait_for(driver, "#live-status.live.on", "the node page is live")
    screenshot(driver, "node-page")

    # root holds the default queue's job: its row counts it (it said 0 running before).
    driver.get(f"{base}/queues")
    wait_for(driver, 'tr[data-queue="root"] td.groups', "root counts its children's PodGroups", contains="1 running")

    # Every live page goes quiet after its load, and opens its live stream only then.
    for path in (*LIVE_PAGES, f"/nodes/{node}"):
        quiet = load_and_settle(driver, f"{base}{path}")
        assert quiet >= QUIET_S, f"{path}: the longest quiet stretch after load was {quiet:.3f}s (< {QUIET_S}s)"
        wait_for(driver, "#live-status.live.on", f"{path}: the live stream runs after the page settled")

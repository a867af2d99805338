"""The dashboard in a real headless Chromium (Debian's `chromium` + `chromium-driver`, installed by
scripts/browser/chromium.sh) against the real embedded system: every service a process on a real
nats-server, vc-dashboard among them.

The page loads, shows a running job, and changes when the job completes, pushed over server-sent
events without a reload (a marker set on the window at load survives every change). Screenshots are
kept as artifacts in .artifacts/dashboard/ (git-ignored); their paths are printed.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.secure import session_bus
from tests.support.services import ServiceProcess
from tests.support.system import System, seed, start_system
from vc_bus.server import free_port

pytestmark = [
    pytest.mark.nats,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]  # the first run installs Chromium

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / ".artifacts" / "dashboard"
# Flags that work on this project's machines: no sandbox (root in a container), no GPU, and nothing
# that reaches for the network on its own (the machines reach only package registries).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)
WAIT_S = 90.0
JOB = "tensorflow-benchmark"
BLOCKED = "too-big"


def chromium_paths() -> tuple[str, str]:
    """Debian's chromium and chromedriver, installed when missing; the test skips, saying why, if they cannot be had."""
    try:
        done = subprocess.run(
            [str(ROOT / "scripts" / "browser" / "chromium.sh")], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"scripts/browser/chromium.sh did not run: {exc}")
    if done.returncode != 0:
        pytest.skip(f"no headless Chromium: scripts/browser/chromium.sh failed: {done.stderr.strip()[-400:]}")
    browser, driver = done.stdout.split()
    return browser, driver


@contextlib.contextmanager
def chromium(profile: Path, *, network_log: bool = False) -> Iterator[Any]:
    """A headless Chromium under WebDriver; with `network_log`, its DevTools network and page events
    are kept in the `performance` log (for tests that look at the requests a page makes)."""
    browser_path, driver_path = chromium_paths()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if network_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    with chromium(tmp_path / "chromium-profile") as driver:
        yield driver


@pytest.fixture
async def dashboard(tmp_path: Path) -> AsyncIterator[tuple[System, str]]:
    system = await start_system(tmp_path)
    port = free_port()
    argv = ["--http-port", str(port), *session_bus().dashboard_logins()]
    process = ServiceProcess("vc-dashboard", system.url, argv, tmp_path / "dashboard.log")
    try:
        process.start()
        await process.wait_ready(timeout=60)
        yield system, f"http://127.0.0.1:{port}"
    finally:
        process.stop_quietly()
        system.stop()


def log_in(driver: Any, base: str) -> None:
    """The admin logs in as a person would: the login page, a token from `vcctl user token`."""
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/login")
    field = driver.find_element(By.ID, "token")
    field.send_keys(session_bus().login_token())
    field.submit()
    wait_for(driver, "h1", "the login leads to the overview", contains="Overview")


def screenshot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"dashboard screenshot: {path}")
    return path


def wait_for(driver: Any, css: str, what: str, *, contains: str = "", attribute: str = "") -> str:
    """The text (or an attribute) of the first element matching `css` once it contains `contains`.

    Read in one script run: the page's content is replaced whenever an update arrives, so an element
    found in one WebDriver call may be gone by the next (a stale element).
    """
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    script = (
        "const e = document.querySelector(arguments[0]); if (!e) return null;"
        "return arguments[1] ? e.getAttribute(arguments[1]) : e.textContent;"
    )

    def found(d: Any) -> str | None:
        value = d.execute_script(script, css, attribute)
        return value if value is not None and contains in value else None

    try:
        return str(WebDriverWait(driver, WAIT_S).until(found))
    except TimeoutException:
        screenshot(driver, "timeout")
        raise AssertionError(
            f"{what}: no {css!r} containing {contains!r} on {driver.current_url} within {WAIT_S:.0f}s"
        ) from None


def click(driver: Any, css: str) -> None:
    driver.execute_script("document.querySelector(arguments[0]).click();", css)


def mark_loaded(driver: Any) -> None:
    """A token on the window: a reload or a navigation would drop it."""
    driver.execute_script("window.tephraLoadToken = 'loaded-once';")


def still_loaded(driver: Any) -> bool:
    return bool(driver.execute_script("return window.tephraLoadToken === 'loaded-once';"))


def updates(driver: Any) -> int:
    return int(driver.execute_script("return Number(document.getElementById('live').dataset.updates);"))


def blocked_job() -> dict[str, Any]:
    """A gang that never fits its queue's capability: it stays Pending with the scheduler's verdict."""
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "6", "memory": "1Gi"}}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": BLOCKED},
        "spec": {
            "schedulerName": "volcano",
            "queue": "research",
            "minAvailable": 2,
            "tasks": [{"name": "trainer", "replicas": 2, "template": {"spec": {"containers": [container]}}}],
        },
    }


async def test_the_dashboard_shows_a_running_job_and_its_completion_live(
    browser: Any, dashboard: tuple[System, str]
) -> None:
    system, base = dashboard
    log_in(browser, base)
    assert (
        system.vcctl(
            "queue", "create", "-N", "research", "--weight", "2", "--capability", "cpu=8,memory=64Gi,nvidia.com/gpu=8"
        ).returncode
        == 0
    )
    browser.get(f"{base}/jobs")
    wait_for(browser, "#live-status.live.on", "the live stream opens")
    mark_loaded(browser)

    await system.apply(blocked_job())
    await system.apply(seed("lm-mpi-job.yaml", durations={"mpimaster": "1h", "mpiworker": "1h"}))  # keeps running
    await system.apply(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "20s"}))
    wait_for(
        browser, f'tr[data-job="default/{JOB}"][data-phase="Running"]', "the job shows as Running", contains="3 Running"
    )
    wait_for(
        browser,
        f'tr[data-job="default/{BLOCKED}"] td.verdict span',
        "the blocked job says why",
        contains="capability",
        attribute="title",
    )
    assert still_loaded(browser) and updates(browser) > 0  # arrived over SSE, not by a reload
    screenshot(browser, "jobs-running")

    click(browser, f'tr[data-job="default/{JOB}"] a')
    wait_for(browser, "table.timeline tr.lane-pod", "the job page draws its timeline")
    wait_for(browser, "#live-status.live.on", "the job page's stream opens")
    mark_loaded(browser)
    wait_for(browser, "h1 .phase", "the job page shows the job Running", contains="Running")
    screenshot(browser, "job-running")

    wait_for(browser, "h1 .phase.phase-completed", "the job page turns Completed")
    assert still_loaded(browser)
    wait_for(browser, "table.history", "the history shows the exits", contains="PodExited")
    marks = browser.execute_script(
        "return document.querySelectorAll('table.timeline line.mark.phase-succeeded').length;"
    )
    assert marks >= 2  # both workers' exits drawn on the timeline
    screenshot(browser, "job-completed")

    browser.get(f"{base}/queues")
    wait_for(browser, 'tr[data-queue="research"]', "the queues page shows research's quota", contains="8 capability")
    browser.get(f"{base}/jobs/default/{BLOCKED}")
    wait_for(browser, "#why-pending pre", "the blocked job's page shows the verdict", contains="capability")
    screenshot(browser, "job-pending")
    browser.get(f"{base}/")
    wait_for(browser, "#live-status.live.on", "the overview's stream opens")
    wait_for(browser, 'tr[data-job="default/lm-mpi-job"][data-phase="Running"]', "the overview lists the running job")
    screenshot(browser, "overview")  # docs/img/dashboard.png is one of these

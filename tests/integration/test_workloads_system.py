"""Volcano's example JobTemplates, JobFlow and CronJob, applied unchanged with vcctl to the whole embedded
system (admission, job controller, scheduler, node-sim and the flow controller, each its own process on
a real nats-server).

The flow behaves as Volcano's documentation says: job `test-a` first, `test-b` after it completes,
`test-c` and `test-d` together, `test-e` once both are done; the flow Succeeds and, its
`jobRetainPolicy` being `delete`, its jobs are removed. The CronJob is taken with Volcano's defaults
applied; its runs are tested with an injected clock in test_flow_controller.py (no test waits for a
five-minute schedule).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.services import eventually
from tests.support.system import System, start_system
from vc_proto.batch import Job
from vc_proto.flow import JobFlow

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "volcano"


async def _start(root: Path) -> System:
    # The examples' pods run `sleep 10s`; simulated pods end after --default-duration instead.
    running = await start_system(root, extra={"node-sim": ["--default-duration", "1s"]})
    try:
        flow = running.services["flow-controller"] = running.service("flow-controller", "vc-flow-controller", [])
        flow.start()
        await flow.wait_ready(timeout=60)
    except BaseException:
        running.stop()
        raise
    return running


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    """One system for the module: the flow's objects (templates a-e, jobs test-*) and the CronJob's
    (volcano-cronjob-example) share no name, and neither test changes a node, a queue or a service."""
    running = asyncio.run(_start(tmp_path_factory.mktemp("workloads")))
    try:
        yield running
    finally:
        running.stop()


def vcctl_json(system: System, *args: str) -> Any:
    result = system.vcctl(*args, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def test_the_example_jobflow_runs_its_jobs_in_order_then_removes_them(system: System) -> None:
    templates = system.vcctl("jobtemplate", "create", "-f", str(FIXTURES / "jobflow-JobTemplate.yaml"))
    assert templates.returncode == 0, templates.stderr
    assert templates.stdout.splitlines() == [f"Created JobTemplate: default/{t}" for t in "abcde"]
    created = system.vcctl("jobflow", "create", "-f", str(FIXTURES / "jobflow-JobFlow.yaml"))
    assert created.returncode == 0 and created.stdout.strip() == "Created JobFlow: default/test", created.stderr

    async def succeeded() -> bool:
        # Polled in the store: a vcctl process per look costs a second of CPU the services need more.
        flow = await system.store_call(lambda s: s.get(JobFlow, "default", "test"))
        return bool(flow.status and flow.status.state and flow.status.state.phase == "Succeed")

    try:
        await eventually(succeeded, timeout=150, interval=0.3)
    except AssertionError as exc:
        raise AssertionError(f"{system.vcctl('jobflow', 'describe', '-N', 'test').stdout}\n{system.logs()}") from exc

    flow = vcctl_json(system, "jobflow", "get", "-N", "test")
    assert flow["status"]["state"]["phase"] == "Succeed", flow
    entries = {entry["name"]: entry for entry in flow["status"]["jobStatusList"]}
    assert sorted(entries) == [f"test-{t}" for t in "abcde"]
    assert all(entry["state"] == "Completed" for entry in entries.values())

    def completed_at(job: str) -> str:
        (seen,) = [h["startTimestamp"] for h in entries[job]["runningHistories"] if h["state"] == "Completed"]
        return str(seen)

    # Each job was created no earlier than the flow controller saw each of its targets Completed.
    for job, targets in {"b": "a", "c": "b", "d": "b", "e": "cd"}.items():
        assert all(entries[f"test-{job}"]["startTimestamp"] >= completed_at(f"test-{t}") for t in targets), entries

    async def jobs_removed() -> bool:
        jobs, _ = await system.store_call(lambda s: s.list(Job, "default"))
        return not [job for job in jobs if (job.metadata.name or "").startswith("test-")]

    await eventually(jobs_removed, timeout=30)
    template = vcctl_json(system, "jobtemplate", "get", "-N", "a")
    assert template["status"]["jobDependsOnList"] == ["test-a"]
    described = system.vcctl("jobflow", "describe", "-N", "test")
    assert "Succeed" in described.stdout and "test-e" in described.stdout
    listed = system.vcctl("jobflow", "list")
    assert listed.stdout.split()[:5] == ["Name", "Phase", "Age", "test", "Succeed"]
    deleted = system.vcctl("jobflow", "delete", "-N", "test")
    assert deleted.returncode == 0 and deleted.stdout.strip() == "Deleted JobFlow: default/test", deleted.stderr
    assert "No resources found" in system.vcctl("jobflow", "list").stdout


async def test_the_example_cronjob_is_taken_with_volcanos_defaults(system: System) -> None:
    created = system.vcctl("cronjob", "create", "-f", str(FIXTURES / "cronjob.yaml"))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "Created CronJob: default/volcano-cronjob-example"
    cronjob = vcctl_json(system, "cronjob", "get", "-N", "volcano-cronjob-example")
    spec = cronjob["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"], spec["startingDeadlineSeconds"]) == (
        "*/5 * * * *",
        "Forbid",
        60,
    )
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"], spec["suspend"]) == (5, 3, False)
    listed = system.vcctl("cronjob", "list")
    assert "volcano-cronjob-example" in listed.stdout and "*/5 * * * *" in listed.stdout
    bad = system.vcctl(
        "cronjob",
        "create",
        "-f",
        "-",
        stdin=(FIXTURES / "cronjob.yaml")
        .read_text()
        .replace('"*/5 * * * *"', '"*/5 * * *"')
        .replace("volcano-cronjob-example", "broken"),
    )
    assert bad.returncode == 1 and "spec.schedule" in bad.stderr
    assert "broken" not in system.vcctl("cronjob", "list").stdout  # nothing of a refused object is stored
    deleted = system.vcctl("cronjob", "delete", "-N", "volcano-cronjob-example")
    assert deleted.returncode == 0, deleted.stderr

"""vcctl against a running admission + store: clear errors and exit codes, nothing stored on rejection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.services import ServiceProcess, eventually
from vc_bus.connection import connect
from vc_bus.server import NatsServer, free_port
from vc_bus.store import NatsStore
from vc_cli.up import ensure_default_queues
from vc_proto import codec

pytestmark = [pytest.mark.nats, pytest.mark.integration]
VCCTL = str(Path(sys.executable).parent / "vcctl")
SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"


@pytest.fixture
async def admission(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    await ensure_default_queues(nats_server.url)  # what `vcctl up` and the queue-controller do
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    yield service
    service.stop_quietly()


def vcctl(server: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VC_SERVER": server}
    return subprocess.run([VCCTL, *args], capture_output=True, text=True, env=env, input=stdin, timeout=60)


async def ready(service: ServiceProcess) -> None:
    await service.wait_ready()


async def test_job_run_list_view_round_trip(nats_server: NatsServer, admission: ServiceProcess) -> None:
    await ready(admission)
    run = vcctl(nats_server.url, "job", "run", "-f", str(SEEDS / "tensorflow-benchmark.yaml"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "run job tensorflow-benchmark successfully"
    listed = vcctl(nats_server.url, "job", "list")
    assert listed.returncode == 0 and "tensorflow-benchmark" in listed.stdout and "Tensorflow" in listed.stdout
    view = vcctl(nats_server.url, "job", "view", "-N", "tensorflow-benchmark", "-o", "json")
    job = json.loads(view.stdout)
    assert job["kind"] == "Job" and job["spec"]["tasks"][1]["name"] == "worker"
    assert job["metadata"]["uid"] and job["metadata"]["resourceVersion"]
    again = vcctl(nats_server.url, "job", "run", "-f", str(SEEDS / "tensorflow-benchmark.yaml"))
    assert again.returncode == 1 and "AlreadyExists" in again.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("kind: [unclosed", "not valid YAML", id="bad-yaml"),
        pytest.param("- 1\n- 2\n", "document 0 is not an object", id="not-an-object"),
        pytest.param("apiVersion: v1\nkind: Queue\nmetadata: {name: q}\n", "not a Job", id="wrong-kind"),
    ],
)
async def test_malformed_files_fail_clearly(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path, content: str, message: str
) -> None:
    await ready(admission)
    path = tmp_path / "job.yaml"
    path.write_text(content)
    result = vcctl(nats_server.url, "job", "run", "-f", str(path))
    assert result.returncode == 2  # bad local input, as a bad flag
    assert message in result.stderr
    assert "Traceback" not in result.stderr


async def test_wrong_field_type_is_rejected_with_the_field_and_nothing_stored(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    await ready(admission)
    path = tmp_path / "job.yaml"
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: bad}\n"
        "spec:\n  tasks:\n  - name: w\n    replicas: three\n"
    )
    result = vcctl(nats_server.url, "job", "run", "-f", str(path))
    assert result.returncode == 1
    assert "spec.tasks[0].replicas" in result.stderr
    assert vcctl(nats_server.url, "job", "list").stdout.strip() == "No resources found"


async def test_queue_create_checks_quantities_before_sending(
    nats_server: NatsServer, admission: ServiceProcess
) -> None:
    await ready(admission)
    bad = vcctl(nats_server.url, "queue", "create", "-N", "q1", "--capability", "cpu=lots")
    assert bad.returncode == 2 and "--capability" in bad.stderr and "not a quantity" in bad.stderr
    good = vcctl(nats_server.url, "queue", "create", "-N", "q1", "--weight", "3", "--capability", "cpu=4,memory=8Gi")
    assert good.returncode == 0, good.stderr
    shown = json.loads(vcctl(nats_server.url, "queue", "get", "-N", "q1", "-o", "json").stdout)
    assert shown["spec"] == {"weight": 3, "capability": {"cpu": "4", "memory": "8Gi"}, "reclaimable": True}


async def test_missing_objects_and_files(nats_server: NatsServer, admission: ServiceProcess) -> None:
    await ready(admission)
    view = vcctl(nats_server.url, "job", "view", "-N", "nope")
    assert view.returncode == 1 and 'job "default/nope" not found' in view.stderr
    # One style for every "not found", whichever command and kind.
    for argv, said in (
        (("queue", "get", "-N", "nope"), 'queue "nope" not found'),
        (("describe", "queue", "nope"), 'queue "nope" not found'),
        (("describe", "job", "nope"), 'job "default/nope" not found'),
    ):
        result = vcctl(nats_server.url, *argv)
        assert result.returncode == 1 and said in result.stderr, (argv, result.stderr)
    missing = vcctl(nats_server.url, "apply", "-f", "/does/not/exist.yaml")
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_no_server_is_a_clear_error() -> None:
    result = vcctl(f"nats://127.0.0.1:{free_port()}", "job", "list")
    assert result.returncode == 1
    assert "cannot reach Tephra" in result.stderr and "Traceback" not in result.stderr


def test_sim_cycle_needs_a_subcommand() -> None:
    result = vcctl("nats://127.0.0.1:1", "sim")
    assert result.returncode == 2 and "usage: vcctl sim cycle" in result.stderr


async def test_invalid_job_is_rejected_by_the_rules_and_nothing_appears(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    await ready(admission)
    path = tmp_path / "job.yaml"
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: greedy}\n"
        "spec:\n  minAvailable: 5\n  tasks:\n  - {name: w, replicas: 2, template: {spec: {containers: [{name: c}]}}}\n"
        "  policies:\n  - {event: PodFailed, exitCode: 3, action: RestartJob}\n"
    )
    result = vcctl(nats_server.url, "job", "run", "-f", str(path))
    assert result.returncode == 1
    assert "minAvailable" in result.stderr and "must not specify event and exitCode simultaneously" in result.stderr
    assert vcctl(nats_server.url, "job", "list").stdout.strip() == "No resources found"
    assert vcctl(nats_server.url, "pod", "list").stdout.strip() == "No resources found"


async def test_rejected_update_leaves_the_stored_object_untouched(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    await ready(admission)
    assert vcctl(nats_server.url, "job", "run", "-f", str(SEEDS / "lm-mpi-job.yaml")).returncode == 0
    before = json.loads(vcctl(nats_server.url, "job", "view", "-N", "lm-mpi-job", "-o", "json").stdout)
    changed = json.loads(json.dumps(before))
    changed["spec"]["queue"] = "elsewhere"  # only replicas/minAvailable/priorityClassName may change
    path = tmp_path / "update.json"
    path.write_text(json.dumps(changed))
    result = vcctl(nats_server.url, "apply", "-f", str(path))
    assert result.returncode == 1 and "may not change fields" in result.stderr
    after = json.loads(vcctl(nats_server.url, "job", "view", "-N", "lm-mpi-job", "-o", "json").stdout)
    assert after == before


async def test_closed_queue_admits_no_new_jobs(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    await ready(admission)
    assert vcctl(nats_server.url, "queue", "create", "-N", "shut").returncode == 0
    queue = json.loads(vcctl(nats_server.url, "queue", "get", "-N", "shut", "-o", "json").stdout)
    queue["status"] = {"state": "Closed"}  # what the queue-controller writes after `vcctl queue operate -a close`
    async with connect(nats_server.url, name="t") as nc:
        await NatsStore(nc).update(codec.from_dict(queue))
    path = tmp_path / "job.yaml"
    path.write_text(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: late}\n"
        "spec:\n  queue: shut\n  tasks:\n  - {name: w, replicas: 1, template: {spec: {containers: [{name: c}]}}}\n"
    )

    async def refused() -> bool:
        result = vcctl(nats_server.url, "job", "run", "-f", str(path))
        return result.returncode == 1 and "can only submit job to queue with state `Open`" in result.stderr

    await eventually(refused, timeout=10)
    assert vcctl(nats_server.url, "job", "list").stdout.strip() == "No resources found"


async def test_apply_and_delete_a_quota_and_a_disruption_budget(
    nats_server: NatsServer, admission: ServiceProcess, tmp_path: Path
) -> None:
    """The namespace policies the scheduler honours go in and out with one file, as with kubectl; a budget
    written for an apiserver before 1.21 (policy/v1beta1) is taken too."""
    await ready(admission)
    path = tmp_path / "policies.yaml"
    path.write_text(
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: compute, namespace: team}\n"
        "spec: {hard: {pods: '4', requests.cpu: '8'}}\n---\n"
        "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: web}\n"
        "spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n"
    )
    applied = vcctl(nats_server.url, "apply", "-f", str(path), "-n", "team")
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.split("\n")[:2] == ["resourcequota/compute applied", "poddisruptionbudget/web applied"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: worse}\nspec: {hard: {pods: '-1'}}\n")
    refused = vcctl(nats_server.url, "apply", "-f", str(bad))
    assert (
        refused.returncode == 1
        and "spec.hard.pods" in refused.stderr
        and "greater than or equal to 0" in refused.stderr
    )
    deleted = vcctl(nats_server.url, "delete", "-f", str(path), "-n", "team")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.split("\n")[:2] == ["resourcequota/compute deleted", "poddisruptionbudget/web deleted"]
    again = vcctl(nats_server.url, "delete", "-f", str(path), "-n", "team")
    assert again.returncode == 1 and "NotFound" in again.stderr

"""vcctl on a running system: `node list -o wide` and `queue list -o wide` show what is allocated, and
`node describe` (and kubectl's word order, `describe node`) lists the node's pods; a job submitted with
`job run --queue` lands in that queue."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from tests.support.services import eventually
from tests.support.system import System, seed, start_system

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    running = await start_system(tmp_path, nodes=1)
    yield running
    running.stop()


async def test_wide_lists_and_node_describe_show_the_allocation(system: System, tmp_path: Path) -> None:
    created = system.vcctl("queue", "create", "-n", "research", "-w", "2", "--capability", "cpu=64,nvidia.com/gpu=8")
    assert created.returncode == 0, created.stderr
    job = tmp_path / "tf.yaml"
    job.write_text(yaml.safe_dump(seed("tensorflow-benchmark.yaml", durations={"ps": "1h", "worker": "1h"})))
    run = system.vcctl("job", "run", "-f", str(job), "--queue", "research")
    assert run.returncode == 0, run.stderr
    await system.wait_phase("tensorflow-benchmark", "Running", timeout=60)
    assert (await system.job("tensorflow-benchmark")).spec.queue == "research"  # type: ignore[union-attr]

    # ps 1 CPU + 2 workers of 2 CPUs, 2 GiB each, all on node-0 (32 CPUs, 256 GiB).
    async def node_shows_them() -> bool:
        wide = system.vcctl("node", "list", "-o", "wide").stdout
        return "5 (15%)" in wide and "6Gi (2%)" in wide

    await eventually(node_shows_them, timeout=30)
    header = system.vcctl("node", "list", "-o", "wide").stdout.splitlines()[0]
    assert "CPU Requests" in header and "Memory Requests" in header and "Pods Placed" in header

    async def queue_shows_them() -> bool:  # the scheduler writes status.allocated within a few seconds
        return "5/64" in system.vcctl("queue", "list", "-o", "wide").stdout

    await eventually(queue_shows_them, timeout=30)
    described = system.vcctl("node", "describe", "node-0")
    assert described.returncode == 0, described.stderr
    page = described.stdout
    assert "Allocated resources:" in page and "5 (15%)" in page
    assert "tensorflow-benchmark-ps-0" in page and "tensorflow-benchmark-worker-1" in page
    missing = system.vcctl("node", "describe", "nope")
    assert missing.returncode == 1 and 'node "nope" not found' in missing.stderr

    kubectl_order = system.vcctl("describe", "node", "node-0")  # kubectl's word order: the same page
    assert kubectl_order.returncode == 0, kubectl_order.stderr
    assert "Allocated resources:" in kubectl_order.stdout and "tensorflow-benchmark-ps-0" in kubectl_order.stdout
    assert kubectl_order.stdout.splitlines()[0] == page.splitlines()[0]
    missing = system.vcctl("describe", "no", "nope")
    assert missing.returncode == 1 and 'node "nope" not found' in missing.stderr

"""Nothing a client sends takes Tephra down (issue 16, the findings under "Why").

Each test sends what a careless or hostile client could (garbage on a subject, garbage values in the
buckets, objects that skipped admission) to real service processes on a real nats-server, then checks
that every affected service is still up and still serves good input.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from nats.aio.client import Client

from tests.support.services import ServiceProcess
from vc_bus.server import NatsServer
from vc_cli.up import ensure_default_queues
from vc_proto import api, subjects

pytestmark = [pytest.mark.nats, pytest.mark.integration]
_reply = msgspec.json.Decoder(api.WriteReply)


def metric(service: ServiceProcess, name: str, **labels: str) -> float:
    """One sample from the service's /metrics (0 when absent)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{service.health_port}/metrics", timeout=2) as response:
        text = response.read().decode()
    wanted = {f'{k}="{v}"' for k, v in labels.items()}
    total = 0.0
    for line in text.splitlines():
        match = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if match and wanted <= set(match.group(1).split(",")):
            total += float(match.group(2))
    return total


def assert_alive(*services: ServiceProcess) -> None:
    for service in services:
        assert service.proc is not None and service.proc.poll() is None, f"{service.binary} died: {service.log_text()[-3000:]}"
        assert service.ready(), f"{service.binary} is not ready: {service.log_text()[-3000:]}"


@pytest.fixture
async def admission(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[ServiceProcess]:
    await ensure_default_queues(nats_server.url)
    service = ServiceProcess("vc-admission", nats_server.url, [], tmp_path / "admission.log").start()
    await service.wait_ready()
    yield service
    service.stop_quietly()


async def write(nc: Client, payload: bytes) -> api.WriteReply:
    return _reply.decode((await nc.request(subjects.ADMISSION_WRITE, payload, timeout=10)).data)


QUEUE = b'{"operation":"create","object":{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"q1"}}}'


async def test_one_byte_on_the_admission_subject_is_refused_and_admission_keeps_serving(
    admission: ServiceProcess, nc: Client
) -> None:
    garbage = [b"\xff", b"[", b"", b'{"operation":"create","object":' + b"[" * 5000 + b"]" * 5000 + b"}"]
    for payload in garbage:
        await nc.publish(subjects.ADMISSION_WRITE, payload)  # no reply subject: nobody to answer
    for payload in garbage:
        reply = await write(nc, payload)
        assert reply.error is not None and reply.error.code == api.INVALID, reply
        assert reply.error.message.startswith("malformed write request")
    assert_alive(admission)
    created = await write(nc, QUEUE)
    assert created.error is None and b'"q1"' in bytes(created.object)
    labels = {"source": subjects.ADMISSION_WRITE, "kind": "WriteRequest"}
    assert metric(admission, "tephra_decode_errors_total", **labels) == 2 * len(garbage)

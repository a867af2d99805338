"""Fuzzed requests through admission, a real `vc-admission` process on a real nats-server: its embedded
write API (NATS request/reply) and its Kubernetes webhook (AdmissionReview over HTTPS).

Every input must be answered, and answered as input: a reply that decodes, an error with a code and a
message (never InternalError: that is admission's last line of defence catching a bug), a 200 with an
AdmissionReview from the webhook (a 413 only for a body over the limit). Afterwards the process is
alive, ready, and serves a good request.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import msgspec
import pytest
from nats.aio.client import Client
from nats.errors import MaxPayloadError
from nats.errors import TimeoutError as NatsTimeout

from tests.fuzz.aftermath import each
from tests.fuzz.budget import EXAMPLES, TIMEOUT_S, Tally, draw
from tests.fuzz.surfaces import Payload, materialize, webhook_posts, write_requests
from tests.support.services import ServiceProcess
from vc_admission.webhook import ROUTES
from vc_bus.server import NatsServer, free_port
from vc_cli.up import ensure_default_queues
from vc_proto import api, subjects

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(TIMEOUT_S)]
_reply = msgspec.json.Decoder(api.WriteReply)
GOOD_QUEUE = (
    b'{"operation":"create","object":{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",'
    b'"metadata":{"name":"fuzz-after"}}}'
)


@pytest.fixture
async def admission(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[tuple[ServiceProcess, int, Path]]:
    await ensure_default_queues(nats_server.url)
    port, certs = free_port(), tmp_path / "certs"
    args = ["--webhook-port", str(port), "--webhook-host", "127.0.0.1", "--generate-certs", str(certs)]
    service = ServiceProcess("vc-admission", nats_server.url, args, tmp_path / "admission.log").start()
    await service.wait_ready(timeout=60)
    yield service, port, certs / "ca.crt"
    service.stop_quietly()


def assert_serving(service: ServiceProcess) -> None:
    assert service.proc is not None and service.proc.poll() is None, f"admission died: {service.log_text()[-3000:]}"
    assert service.ready(), f"admission is not ready: {service.log_text()[-3000:]}"
    assert "write_api.request_failed" not in service.log_text(), service.log_text()[-3000:]


async def test_the_write_api_answers_every_fuzzed_request_as_input(
    admission: tuple[ServiceProcess, int, Path], nc: Client
) -> None:
    service, _, _ = admission
    inputs = await asyncio.to_thread(draw, write_requests)  # off the loop: a connection must keep answering pings
    tally = Tally("admission write API (NATS request/reply)")

    async def handle(payload: Payload) -> None:
        data = materialize(payload)
        try:
            msg = await nc.request(subjects.ADMISSION_WRITE, data, timeout=60)
        except MaxPayloadError:
            tally.add("over the bus's max_payload (refused by the client)")
            return
        except NatsTimeout:
            tally.crash("no answer within 60 s", data)
            return
        try:
            reply = _reply.decode(msg.data)
        except msgspec.DecodeError as exc:
            tally.crash(f"the reply does not decode ({exc})", data)
            return
        if reply.error is None:
            tally.add("accepted")
        elif reply.error.code == api.INTERNAL or not reply.error.message:
            tally.crash(f"{reply.error.code}: {reply.error.message}", data)
        else:
            tally.add(reply.error.code)

    await each(inputs, handle)
    tally.finish(EXAMPLES)
    assert_serving(service)
    good = _reply.decode((await nc.request(subjects.ADMISSION_WRITE, GOOD_QUEUE, timeout=10)).data)
    assert good.error is None, good.error


async def test_the_webhook_answers_every_fuzzed_review_with_an_admission_review(
    admission: tuple[ServiceProcess, int, Path],
) -> None:
    service, port, ca = admission
    inputs = await asyncio.to_thread(draw, webhook_posts)  # off the loop: a connection must keep answering pings
    tally = Tally("admission webhook (AdmissionReview over HTTPS)")
    tls = ssl.create_default_context(cafile=str(ca))
    base = f"https://127.0.0.1:{port}"

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:

        async def handle(post: tuple[str, Payload]) -> None:
            path, body = post[0], materialize(post[1])
            try:
                async with session.post(
                    base + path, data=body, ssl=tls, headers={"Content-Type": "application/json"}
                ) as response:
                    text = await response.read()
                    status = response.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                tally.crash(f"{path}: {type(exc).__name__} {exc}", body)
                return
            if status == 413 and len(body) > api.MAX_REQUEST_BYTES:
                tally.add("413 (over the request limit)")
                return
            if status == 404 and path not in ROUTES:
                tally.add("404 (no such route)")
                return
            try:
                answer = json.loads(text)
                response_part = answer["response"]
                allowed = response_part["allowed"]
            except (ValueError, KeyError, TypeError):
                tally.crash(f"{path}: HTTP {status}, not an AdmissionReview: {text[:200]!r}", body)
                return
            if status != 200 or answer.get("kind") != "AdmissionReview" or not isinstance(allowed, bool):
                tally.crash(f"{path}: HTTP {status}: {text[:200]!r}", body)
            elif allowed:
                tally.add("allowed")
            elif not (response_part.get("status") or {}).get("message"):
                tally.crash(f"{path}: refused without a message: {text[:200]!r}", body)
            else:
                tally.add("refused")

        await each(inputs, handle)
        tally.finish(EXAMPLES)
        assert_serving(service)
        assert "aiohttp.server" not in service.log_text() and "Error handling request" not in service.log_text()
        good = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "after",
                "kind": {"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": "Queue"},
                "operation": "CREATE",
                "object": {
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "kind": "Queue",
                    "metadata": {"name": "after"},
                    "spec": {"weight": 1},
                },
            },
        }
        async with session.post(base + "/queues/validate", json=good, ssl=tls) as response:
            assert response.status == 200 and (await response.json())["response"]["allowed"] is True

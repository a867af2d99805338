"""The Kubernetes front-end of admission over real HTTPS with real AdmissionReview JSON."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from vc_admission import certs
from vc_admission.http import serve_webhook, tls_context
from vc_bus.server import free_port
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus
from vc_validation import StaticContext, apply_json_patch

SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"


def queue(name: str, allowed: list[str] | None = None) -> Queue:
    return Queue(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name),
        spec=QueueSpec(weight=1, allowed_namespaces=allowed),
        status=QueueStatus(state="Open"),
    )


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[str, ssl.SSLContext]]:
    ca_path, cert_path, key_path = certs.generate(["tephra-admission.tephra-system.svc"]).write(tmp_path / "tls")
    queues = {"default": queue("default"), "root": queue("root"), "team-a": queue("team-a", ["team-a"])}
    ctx = StaticContext(queues=queues)
    port = free_port()
    started = asyncio.Event()
    async with asyncio.TaskGroup() as tg:
        server = tg.create_task(
            serve_webhook(ctx, host="127.0.0.1", port=port, tls=tls_context(cert_path, key_path), started=started)
        )
        await started.wait()
        client_tls = ssl.create_default_context(cafile=str(ca_path))
        yield f"https://127.0.0.1:{port}", client_tls
        server.cancel()


def review(
    kind: dict[str, str],
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "operation": operation,
            "namespace": namespace,
            "object": obj,
            "oldObject": old,
            "userInfo": {"username": "kubernetes-admin"},
        },
    }


JOB_KIND = {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"}


async def post(base: str, tls: ssl.SSLContext, path: str, body: dict[str, Any] | bytes) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as session,
        session.post(base + path, data=data, ssl=tls, headers={"Content-Type": "application/json"}) as r,
    ):
        assert r.status == 200
        result: dict[str, Any] = await r.json()
        return result


async def test_mutate_returns_a_jsonpatch_with_volcano_defaults(webhook: tuple[str, ssl.SSLContext]) -> None:
    base, tls = webhook
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {
            "tasks": [{"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}],
            "plugins": {"mpi": []},
        },
    }
    request = review(JOB_KIND, "CREATE", job)
    answer = await post(base, tls, "/jobs/mutate", request)
    response = answer["response"]
    assert answer["kind"] == "AdmissionReview" and response["uid"] == request["request"]["uid"] and response["allowed"]
    assert response["patchType"] == "JSONPatch"
    patched = apply_json_patch(job, json.loads(base64.b64decode(response["patch"])))
    spec = patched["spec"]
    assert spec["queue"] == "default" and spec["schedulerName"] == "volcano" and spec["maxRetry"] == 3
    assert spec["minAvailable"] == 2 and spec["tasks"][0]["name"] == "default0"
    assert set(spec["plugins"]) == {"mpi", "ssh", "svc"}


async def test_validate_denies_with_the_field_and_message(webhook: tuple[str, ssl.SSLContext]) -> None:
    base, tls = webhook
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "queue": "default",
            "minAvailable": 5,
            "tasks": [
                {"name": "w", "replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
            ],
        },
    }
    response = (await post(base, tls, "/jobs/validate", review(JOB_KIND, "CREATE", job)))["response"]
    assert response["allowed"] is False
    assert "minAvailable" in response["status"]["message"]


async def test_a_plain_pod_naming_a_queue_its_namespace_may_not_use_is_denied(
    webhook: tuple[str, ssl.SSLContext],
) -> None:
    base, tls = webhook
    kind = {"group": "", "version": "v1", "kind": "Pod"}

    def pod(queue: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"scheduling.volcano.sh/queue-name": queue}},
            "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "x"}]},
        }

    refused = await post(base, tls, "/pods/validate", review(kind, "CREATE", pod("team-a"), namespace="team-b"))
    response = refused["response"]
    assert response["allowed"] is False
    assert response["status"]["message"] == (
        "metadata.annotations[scheduling.volcano.sh/queue-name]: namespace `team-b` is not allowed to submit "
        "to queue `team-a`"
    )
    allowed = await post(base, tls, "/pods/validate", review(kind, "CREATE", pod("team-a"), namespace="team-a"))
    assert allowed["response"]["allowed"] is True


async def test_seed_jobs_are_admitted_unchanged_by_validation(webhook: tuple[str, ssl.SSLContext]) -> None:
    base, tls = webhook
    for name in ("tensorflow-benchmark.yaml", "lm-mpi-job.yaml"):
        seed = yaml.safe_load((SEEDS / name).read_text())
        mutated = (await post(base, tls, "/jobs/mutate", review(JOB_KIND, "CREATE", seed)))["response"]
        patched = apply_json_patch(seed, json.loads(base64.b64decode(mutated.get("patch", "W10="))))
        verdict = (await post(base, tls, "/jobs/validate", review(JOB_KIND, "CREATE", patched)))["response"]
        assert verdict["allowed"], verdict


async def test_queue_delete_of_default_is_refused(webhook: tuple[str, ssl.SSLContext]) -> None:
    base, tls = webhook
    default = {
        "apiVersion": SCHEDULING_V1BETA1,
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1},
    }
    kind = {"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": "Queue"}
    response = (await post(base, tls, "/queues/validate", review(kind, "DELETE", None, default)))["response"]
    assert response["allowed"] is False and "can not be deleted" in response["status"]["message"]


async def test_malformed_reviews_get_an_answer_not_an_error(webhook: tuple[str, ssl.SSLContext]) -> None:
    base, tls = webhook
    assert (await post(base, tls, "/jobs/validate", b"not json"))["response"]["allowed"] is False
    wrong_shape = review(
        JOB_KIND,
        "CREATE",
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"tasks": "many"},
        },
    )
    response = (await post(base, tls, "/jobs/validate", wrong_shape))["response"]
    assert response["allowed"] is False and "tasks" in response["status"]["message"]


async def test_untrusted_clients_cannot_talk_plain_http(webhook: tuple[str, ssl.SSLContext]) -> None:
    base, _ = webhook
    with pytest.raises(aiohttp.ClientError):
        async with (
            aiohttp.ClientSession() as session,
            session.post(base.replace("https", "http") + "/jobs/validate", data=b"{}"),
        ):
            pass

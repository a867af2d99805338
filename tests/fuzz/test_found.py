"""What the fuzzers found, pinned as plain tests (in process; the fuzzers reach the same code through real
processes): each input was answered with InternalError or HTTP 500 before it was fixed."""

from __future__ import annotations

import json

import msgspec
import pytest

from vc_admission.context import CacheContext
from vc_admission.review import Admitter
from vc_admission.webhook import handle_review
from vc_admission.write_api import WriteApi
from vc_bus.testing import MemoryStore
from vc_proto import api
from vc_sched_core.snapshot.loader import SnapshotError, decode_json
from vc_validation import StaticContext

_reply = msgspec.json.Decoder(api.WriteReply)


async def answer(request: bytes) -> api.WriteReply:
    store = MemoryStore()
    return _reply.decode(await WriteApi(store, Admitter(CacheContext(store))).handle(request))


@pytest.mark.parametrize(
    ("request_bytes", "field"),
    [
        (b'{"operation":"delete","kind":"Pod","namespace":"fuzz","name":" "}', "name"),
        (b'{"operation":"delete","kind":"Job","namespace":".","name":"a"}', "namespace"),
        (
            b'{"operation":"apply","object":{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",'
            b'"metadata":{"name":"fz-gang","namespace":"."}}}',
            "metadata.namespace",
        ),
        (
            b'{"operation":"update","object":{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",'
            b'"metadata":{"name":"\\ud83d\\ude00","namespace":"fuzz"}}}',
            "metadata.name",
        ),
    ],
)
async def test_a_name_that_cannot_be_a_key_is_refused_naming_the_field(request_bytes: bytes, field: str) -> None:
    reply = await answer(request_bytes)
    assert reply.error is not None and reply.error.code == api.INVALID, reply
    assert reply.error.causes and reply.error.causes[0].field == field, reply.error


async def test_an_object_that_is_not_utf8_is_refused_as_invalid() -> None:
    reply = await answer(
        b'{"operation":"create","object":{"apiVersion":"v1","kind":"Secret",'
        b'"metadata":{"name":"f\xc8Esecret","namespace":"fuzz"}}}'
    )
    assert reply.error is not None and reply.error.code == api.INVALID, reply
    assert "UTF-8" in reply.error.message


def review(obj: object) -> bytes:
    return json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "namespace": "fuzz", "object": obj},
        }
    ).encode()


@pytest.mark.parametrize(
    "body",
    [
        review(None),
        b'{"request":{"uid":"u","operation":"CREATE","object":' + b"[" * 5000 + b"]" * 5000 + b"}}",
        b"[" * 5000 + b"]" * 5000,
    ],
    ids=["null-object", "deep-object", "deep-review"],
)
def test_the_webhook_refuses_what_it_cannot_judge_with_a_message(body: bytes) -> None:
    answer = handle_review("/queues/validate", body, StaticContext())
    assert answer["kind"] == "AdmissionReview" and answer["response"]["allowed"] is False
    assert answer["response"]["status"]["message"]


@pytest.mark.parametrize("route", ["/jobs/validate", "/queues/validate"])
@pytest.mark.parametrize("operation", ["UPDATE", "DELETE"])
def test_the_webhook_refuses_an_update_or_delete_without_its_old_object(route: str, operation: str) -> None:
    kind = {
        "/jobs/validate": "Job",
        "/queues/validate": "Queue",
        "/podgroups/validate": "PodGroup",
        "/pods/mutate": "Pod",
    }
    body = json.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "operation": operation,
                "namespace": "fuzz",
                "oldObject": None,
                "object": {"apiVersion": "v1", "kind": kind[route], "metadata": {"name": "a", "namespace": "fuzz"}},
            },
        }
    ).encode()
    answer = handle_review(route, body, StaticContext())
    assert answer["response"]["allowed"] is False and "oldObject" in answer["response"]["status"]["message"]


def test_the_scheduler_cache_skips_a_stored_value_that_is_not_utf8() -> None:
    with pytest.raises(SnapshotError, match="not UTF-8"):  # reported and skipped by the cache, not a crash
        decode_json("Pod", b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a\x8fb","namespace":"fuzz"}}')

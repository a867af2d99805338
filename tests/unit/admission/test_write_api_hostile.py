"""The embedded write API answers every request, however malformed, with a clear error,
never InternalError: a client's mistake must be told as one."""

from __future__ import annotations

import msgspec
import pytest
from prometheus_client import REGISTRY

from vc_admission.context import CacheContext
from vc_admission.decoding import decode_object
from vc_admission.review import Admitter
from vc_admission.write_api import WriteApi
from vc_bus.testing import MemoryStore
from vc_core.errors import InvalidObject
from vc_proto import api, subjects

_reply = msgspec.json.Decoder(api.WriteReply)
DEEP = b'{"operation":"create","object":' + b"[" * 5000 + b"]" * 5000 + b"}"


def decode_errors() -> float:
    labels = {"source": subjects.ADMISSION_WRITE, "kind": "WriteRequest"}
    return REGISTRY.get_sample_value("tephra_decode_errors_total", labels) or 0.0


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"\xff", id="one-byte"),
        pytest.param(b"", id="empty"),
        pytest.param(b"[", id="truncated"),
        pytest.param(b'"create"', id="not-an-object"),
        pytest.param(b'{"operation":"explode"}', id="unknown-operation"),
        pytest.param(DEEP, id="deeply-nested"),
    ],
)
async def test_an_undecodable_request_gets_an_invalid_reply_and_is_counted(payload: bytes) -> None:
    write_api = WriteApi(MemoryStore(), Admitter(CacheContext(MemoryStore())))
    before = decode_errors()
    reply = _reply.decode(await write_api.handle(payload))
    assert reply.error is not None and reply.error.code == api.INVALID
    assert reply.error.message.startswith("malformed write request:")
    assert decode_errors() == before + 1


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        pytest.param(b'{"kind":"Queue","metadata":' + b"[" * 5000 + b"]" * 5000 + b"}", "nesting", id="deeply-nested"),
        pytest.param(b"5", "json", id="a-number"),
        pytest.param(b"\xff", "json", id="not-json"),
    ],
)
def test_an_undecodable_object_is_invalid_with_its_rule(data: bytes, rule: str) -> None:
    with pytest.raises(InvalidObject) as raised:
        decode_object(data)
    assert raised.value.rule == rule

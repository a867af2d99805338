"""What the store accepts as a stored object, and how a skipped value is reported."""

from __future__ import annotations

import msgspec
import pytest
from prometheus_client import REGISTRY

from vc_bus.decoding import CorruptObject, decode_or_none, describe
from vc_bus.store import decode_stored
from vc_proto import codec
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.core import CORE_V1, Node, Pod
from vc_proto.meta import ObjectMeta

JOB = codec.encode(Job(api_version=BATCH_V1ALPHA1, metadata=ObjectMeta(name="train", namespace="team-a")))
NODE = codec.encode(Node(api_version=CORE_V1, metadata=ObjectMeta(name="node-0")))
METADATA_5 = b'{"kind":"Pod","apiVersion":"v1","metadata":5}'
# A probe is kept as raw JSON (Tephra does not interpret it), so only there can nesting go deep.
DEEP_POD = b'{"kind":"Pod","apiVersion":"v1","spec":{"containers":[{"name":"a","livenessProbe":{"a":%s}}]}}' % (
    b"[" * 3000 + b"]" * 3000
)
POD = codec.encode(Pod(api_version=CORE_V1, metadata=ObjectMeta(name="train", namespace="team-a")))


def test_a_good_value_decodes_with_its_revision_as_resource_version() -> None:
    job = decode_stored("Job", "team-a.train", JOB, 42)
    assert isinstance(job, Job) and job.metadata.resource_version == "42"
    assert decode_stored("Node", "_.node-0", NODE, 7).metadata.name == "node-0"
    assert decode_stored("Job", "team-a.train", JOB, 42, keep_resource_version=True).metadata.resource_version is None


@pytest.mark.parametrize(
    ("kind", "key", "data", "reason"),
    [
        pytest.param("Job", "default.garbage", b"\xff", "malformed", id="one-byte"),
        pytest.param("Pod", "default.p", METADATA_5, "Expected `object`", id="metadata-5"),
        pytest.param("Pod", "default.d", DEEP_POD, "recursion", id="deeply-nested"),
        pytest.param("Job", "default.u", b'{"kind":"Unknown"}', "Invalid value 'Unknown'", id="unknown-kind"),
        pytest.param("Job", "team-a.train", POD, "it is a Pod", id="another-kind"),
        pytest.param("Job", "team-a.other", JOB, "its metadata names 'team-a/train'", id="another-key"),
        pytest.param("Job", "team-b.train", JOB, "its metadata names 'team-a/train'", id="another-namespace"),
        pytest.param("Node", "_.node-1", NODE, "its metadata names 'node-0'", id="cluster-scoped-another-name"),
    ],
)
def test_a_bad_value_is_a_corrupt_object_naming_key_revision_and_reason(
    kind: str, key: str, data: bytes, reason: str
) -> None:
    with pytest.raises(CorruptObject) as raised:
        decode_stored(kind, key, data, 9)
    error = raised.value
    assert (error.kind, error.key, error.revision) == (kind, key, 9)
    assert reason in error.reason and key in str(error)


def test_decode_or_none_skips_counts_and_keeps_the_reason_short() -> None:
    labels = {"source": "test-subject", "kind": "Job"}
    before = REGISTRY.get_sample_value("tephra_decode_errors_total", labels) or 0.0
    assert decode_or_none(codec.decoder(Job).decode, b"\xff", source="test-subject", kind="Job") is None
    assert decode_or_none(codec.decoder(Job).decode, JOB, source="test-subject", kind="Job") is not None
    assert REGISTRY.get_sample_value("tephra_decode_errors_total", labels) == before + 1
    assert len(describe(msgspec.ValidationError("x" * 10_000))) < 320
    assert describe("two\nlines") == "two lines"

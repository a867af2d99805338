"""Hostile stored values: anyone who reaches NATS can put bytes into a bucket the scheduler follows. A
value that is not an object of its kind (or not a ledger record) is reported and skipped; the scheduler
goes on with the rest and never dies of it (a deeply nested document once raised RecursionError)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from vc_bus.decoding import DECODE_ERRORS
from vc_proto import subjects
from vc_proto.scheduling import PodGroup
from vc_sched_core.snapshot.loader import SnapshotError, decode_json, load_snapshot
from vc_scheduler import ledger
from vc_scheduler.cache import SchedulerCache, stored_object

DEEP = b"[" * 200_000 + b"]" * 200_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
NODE = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}}
HOSTILE = (
    DEEP,
    DEEP_OBJECT,
    b'{"kind": "Node", "metadata": ' + DEEP + b"}",
    b"\xff\xfe not utf-8",
    b"",
    b"null",
    b'{"kind": "Node", "metadata": {"name": 7}}',
    b'{"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1e999999999"}}}',
)


def _errors(source: str, kind: str) -> float:
    return DECODE_ERRORS.labels(source, kind)._value.get()


@pytest.mark.parametrize("data", HOSTILE)
def test_a_hostile_object_is_a_snapshot_error(data: bytes) -> None:
    with pytest.raises(SnapshotError):
        decode_json("Node", data)


def test_a_deeply_nested_snapshot_file_is_a_snapshot_error() -> None:
    with pytest.raises(SnapshotError, match=r"nested too deeply|not valid YAML"):
        load_snapshot(b"[" * 200_000)


def test_the_cache_reports_a_hostile_value_and_keeps_the_view_it_had() -> None:
    cache = SchedulerCache()
    assert cache._put("Node", "n1", json.dumps(NODE).encode(), cache.nodes)
    held = cache.nodes["n1"]
    before = _errors(subjects.bucket("Node"), "Node")
    for data in HOSTILE:
        assert not cache._put("Node", "n1", data, cache.nodes)
    assert cache.nodes["n1"] is held and cache.decode_errors == len(HOSTILE)
    assert _errors(subjects.bucket("Node"), "Node") == before + len(HOSTILE)


def test_a_hostile_cached_copy_is_none_so_the_writer_reads_the_store() -> None:
    before = _errors(subjects.bucket("PodGroup"), "PodGroup")
    assert stored_object(PodGroup, (DEEP, 3)) is None
    assert stored_object(PodGroup, (b"{not json", 3)) is None
    assert _errors(subjects.bucket("PodGroup"), "PodGroup") == before + 2


@pytest.mark.parametrize(
    "data",
    [
        DEEP,
        b'{"r": ' + DEEP + b"}",
        b'{"r": {"u1": ["ns/a", "s0", 1, 1.0, {"cpu": "1e999999999"}]}}',  # Fraction() would build it
        b'{"r": {"u1": ["ns/a", "s0", 1, 1.0, {"cpu": "abc"}]}}',  # Fraction() raises, later, in arithmetic
        b'{"r": {"u1": ["ns/a", "s0", 1, 1.0, {"cpu": "-4"}]}}',  # a negative reservation frees capacity
        b'{"r": {"u1": ["ns/a", "s0", 1, 1.0, {"cpu": "1/0"}]}}',
        b'{"r": {"u1": ["ns/a", "s0", "one", 1.0, {}]}}',
        b'{"r": []}',
    ],
)
def test_a_hostile_ledger_value_is_refused_at_decode(data: bytes) -> None:
    with pytest.raises(ValueError):
        ledger.decode(data)


def test_what_encode_writes_decodes() -> None:
    reservation = ledger.reservation(
        "ns/a", {"cpu": Fraction(1, 2), "memory": Fraction(0)}, instance="s0", epoch=1, at=2.0
    )
    record = ledger.Record({"u1": reservation})
    assert ledger.decode(ledger.encode(record)) == record
    assert ledger.decode(None) == ledger.decode(b"") == ledger.Record()

"""JetStream writes per pod (benchmarks/streamstat.py): the arithmetic over made-up stream sequences."""

from __future__ import annotations

from benchmarks.streamstat import describe, writes_per_pod


def test_writes_per_pod_are_the_sequence_differences_busiest_first() -> None:
    before = {"KV_vc-pod": 100, "VC_EVT": 40, "KV_vc-queue": 7}
    after = {"KV_vc-pod": 400, "VC_EVT": 140, "KV_vc-queue": 7, "KV_vc-ledger": 50}
    per_pod = writes_per_pod(before, after, pods=100)
    # The untouched queue bucket is left out; a stream made during the phase counts from zero.
    assert per_pod == {"KV_vc-pod": 3.0, "VC_EVT": 1.0, "KV_vc-ledger": 0.5}
    assert list(per_pod) == ["KV_vc-pod", "VC_EVT", "KV_vc-ledger"]


def test_no_pods_divides_by_one_and_the_summary_names_buckets_plainly() -> None:
    per_pod = writes_per_pod({}, {"KV_vc-pod": 3, "VC_EVT": 3}, pods=0)
    assert list(per_pod.items()) == [("KV_vc-pod", 3.0), ("VC_EVT", 3.0)]  # ties by stream name
    assert describe(per_pod) == "6.00 writes/pod [vc-pod 3.00, VC_EVT 3.00]"

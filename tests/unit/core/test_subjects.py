"""Object keys and subjects: names with dots never collide and always round-trip."""

from __future__ import annotations

import pytest

from vc_proto import subjects


@pytest.mark.parametrize(
    ("namespace", "name"), [("default", "job-1"), ("ns", "a.b.c"), (None, "node-0"), (None, "n.1")]
)
def test_object_keys_round_trip(namespace: str | None, name: str) -> None:
    key = subjects.object_key(namespace, name)
    assert key.count(".") == 1  # namespace token . name token: wildcards can select a namespace
    assert subjects.split_key(key) == (namespace, name)


def test_dotted_and_dashed_names_get_distinct_keys() -> None:
    assert subjects.object_key("ns", "a.b") != subjects.object_key("ns", "a-b")


def test_event_subjects_put_a_jobs_history_under_one_filter() -> None:
    assert subjects.event_subject("job", "default", "train.v1") == "vc.evt.job.default.train_v1"
    assert subjects.event_filter("job", "default", "train.v1") == "vc.evt.job.default.train_v1"
    assert subjects.event_filter() == "vc.evt.*.*.*"
    assert subjects.namespace_filter("ns") == "ns.>" and subjects.namespace_filter(None) == ">"


@pytest.mark.parametrize(("namespace", "name"), [("default", "job-1-worker-0"), ("ns", "a.b.c")])
def test_pod_keys_carry_a_shard_and_round_trip(namespace: str, name: str) -> None:
    key = subjects.pod_key(namespace, 17, name)
    assert key.count(".") == 2 and key.split(".")[1] == "17"
    assert subjects.split_key(key) == (namespace, name)


def test_a_pods_name_filter_matches_its_key_in_any_shard() -> None:
    namespace, shard, name = subjects.pod_name_filter("ns", "a.b").split(".")
    assert (namespace, shard, name) == ("ns", "*", "a_b")
    assert subjects.pod_shard_filter(17) == "*.17.>"

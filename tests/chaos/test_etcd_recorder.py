"""The etcd recorder's reading of watch responses (etcd's JSON gateway), without a server: which keys
are recorded as which kind, previous revisions, deletes, and the gaps it must report."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.chaos.checker import check
from tests.chaos.etcd_recorder import EtcdRecorder, kind_and_key, place_survey
from tests.chaos.history import Change, History, Survey


def _kv(key: str, rev: int, value: dict[str, Any] | None = None) -> dict[str, Any]:
    kv: dict[str, Any] = {"key": base64.b64encode(key.encode()).decode(), "mod_revision": str(rev)}
    if value is not None:
        kv["value"] = base64.b64encode(json.dumps(value).encode()).decode()
    return kv


def _put(key: str, rev: int, value: dict[str, Any], prev: int = 0) -> dict[str, Any]:
    event: dict[str, Any] = {"kv": _kv(key, rev, value)}  # PUT is proto3's zero value: absent in JSON
    if prev:
        event["prev_kv"] = _kv(key, prev, value)
    return event


def test_recorded_kinds_and_their_keys() -> None:
    assert kind_and_key("/registry/pods/default/p-0") == ("Pod", "default.p-0")
    assert kind_and_key("/registry/minions/node-3") == ("Node", "_.node-3")
    assert kind_and_key("/registry/batch.volcano.sh/jobs/default/j") == ("Job", "default.j")
    assert kind_and_key("/registry/scheduling.volcano.sh/podgroups/ns/g") == ("PodGroup", "ns.g")
    assert kind_and_key("/registry/scheduling.volcano.sh/queues/q0") == ("Queue", "_.q0")
    assert kind_and_key("/registry/events/default/x.1") is None  # not a recorded kind
    assert kind_and_key("/registry/leases/kube-system/x") is None
    assert kind_and_key("/other/pods/default/p") is None


def test_changes_in_revision_order_with_previous_revisions_and_deletes() -> None:
    history = History()
    recorder = EtcdRecorder("", history)
    job = {"metadata": {"name": "j", "uid": "u1"}, "status": {"state": {"phase": "Running"}}}
    recorder._response({"events": [_put("/registry/batch.volcano.sh/jobs/default/j", 10, job)]})
    recorder._response(
        {
            "events": [
                _put("/registry/events/default/e", 11, {}),
                _put("/registry/minions/n1", 12, {"metadata": {"name": "n1"}}),
                {"type": "DELETE", "kv": _kv("/registry/batch.volcano.sh/jobs/default/j", 13), "prev_kv": _kv("", 10)},
            ]
        }
    )
    changes = history.changes()
    assert [(c.kind, c.seq, c.op, c.previous) for c in changes] == [
        ("Job", 10, "put", 0),
        ("Node", 12, "put", 0),
        ("Job", 13, "delete", 10),
    ]
    assert changes[0].obj == job and changes[2].obj is None
    assert recorder.revision == 13 and recorder.nodes == {"_.n1"} and recorder.jobs == {"default.j": "deleted"}
    assert history.gaps == []


def test_a_missed_revision_and_a_compaction_are_gaps() -> None:
    history = History()
    recorder = EtcdRecorder("", history)
    recorder._response({"events": [_put("/registry/pods/default/p", 5, {"metadata": {"uid": "a"}})]})
    recorder._response({"events": [_put("/registry/pods/default/p", 9, {"metadata": {"uid": "a"}}, prev=7)]})
    assert [(g.kind, g.seq, g.key) for g in history.gaps] == [("Pod", 9, "default.p")]
    recorder._response({"compact_revision": "40", "canceled": True})
    assert history.gaps[-1].seq == 10 and "compacted" in history.gaps[-1].why
    assert recorder.revision == 39  # the watch resumes from what etcd still has


def test_a_value_that_is_not_json_is_recorded_without_an_object() -> None:
    history = History()
    recorder = EtcdRecorder("", history)
    event = {"kv": {**_kv("/registry/pods/default/p", 3), "value": base64.b64encode(b"k8s\x00proto").decode()}}
    recorder._response({"events": [event]})
    assert history.records == [Change("Pod", 3, "default.p", "put", None, history.changes()[0].at, 0)]


def _change(kind: str, seq: int, key: str, op: str = "put") -> Change:
    return Change(kind, seq, key, op, {"metadata": {"uid": key}} if op == "put" else None, float(seq))  # type: ignore[arg-type]


def test_a_survey_goes_where_the_history_reached_etcds_answer_and_confirms_deletes() -> None:
    history = History()
    history.records += [
        _change("Job", 10, "default.a"),
        _change("Job", 12, "default.b"),
        _change("Job", 14, "default.b", "delete"),
        _change("Job", 21, "default.a"),  # recorded while the survey waited: after etcd's answer
    ]
    place_survey(history.records, 20, {"Job": {"default.a": 10}, "Pod": {}}, "etcd restarted", 0.0)
    kinds = [type(r).__name__ for r in history.records]
    assert kinds == ["Change", "Change", "Change", "Survey", "Survey", "Change"]
    survey = history.records[3]
    assert isinstance(survey, Survey) and survey.newest == {"default.a": 10, "default.b": 14}
    lost = [v for v in check(history).violations if v.invariant == "write-lost"]
    assert lost == []  # rev 21 came after the survey, and b's delete is confirmed


def test_a_write_etcd_no_longer_holds_after_a_restart_is_a_violation() -> None:
    history = History()
    history.records += [_change("Job", 10, "default.a"), _change("Job", 12, "default.a")]
    place_survey(history.records, 12, {"Job": {"default.a": 10}}, "etcd restarted", 0.0)
    assert [v.invariant for v in check(history).violations if v.invariant == "write-lost"] == ["write-lost"]

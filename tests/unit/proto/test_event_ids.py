"""One id scheme for domain events (vc_proto.events.event_id) and the job-fact builder every service
that speaks about a whole job uses."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from vc_proto import codec
from vc_proto.events import event_id, job_event


def test_the_same_fact_gets_the_same_id_and_another_fact_another() -> None:
    assert event_id("gc", "uid-1", "GarbageCollected") == event_id("gc", "uid-1", "GarbageCollected")
    assert event_id("gc", "uid-1", "GarbageCollected") != event_id("gc", "uid-2", "GarbageCollected")
    # Parts are joined with "/", which object names cannot hold: ("a/b", "c") is the only ambiguity,
    # and uids and reasons have no "/".
    assert len(event_id("x")) == 32 and event_id(None, 0) == event_id("None", "0")


def test_a_job_fact_names_the_job_and_is_identified_by_source_uid_reason_and_identity() -> None:
    job = codec.decode_object(
        b'{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",'
        b'"metadata":{"name":"j1","namespace":"team-a","uid":"u1"},"spec":{}}'
    )
    fact = job_event(job, source="gc", reason="GarbageCollected", message="m", occurred_at="2026-01-01T00:00:00Z")
    assert (fact.kind, fact.namespace, fact.name, fact.job, fact.uid) == ("Job", "team-a", "j1", "j1", "u1")
    assert fact.id == event_id("gc", "u1", "GarbageCollected")
    other = job_event(job, source="gc", reason="GarbageCollected", message="m", occurred_at="t", identity=("x",))
    assert other.id != fact.id


@given(st.lists(st.one_of(st.text(), st.integers(), st.none()), max_size=5))
def test_an_id_is_the_name_based_uuid_of_its_parts_so_ids_already_stored_stay_valid(parts: list[object]) -> None:
    # Events stored by an earlier version are deduplicated against the ids a restarted service gives the
    # same facts: the digits must be uuid5's exactly.
    name = "/".join(str(part) for part in parts)
    assert event_id(*parts) == uuid.uuid5(uuid.NAMESPACE_URL, name).hex

"""The consumers admission makes for a tenant stay within its namespaces and deliver to its own inbox."""

from __future__ import annotations

import msgspec
import pytest

from vc_security.consumer_requests import (
    ConsumerForbidden,
    ConsumerRefused,
    ConsumerRequest,
    decode_request,
    grant_consumer,
    subject_within,
)
from vc_security.identities import admin_grant, tenant_grant

ALICE = tenant_grant("alice", frozenset({"team-a", "team-a-ci"}))


def request(**fields: object) -> ConsumerRequest:
    base: dict[str, object] = {
        "stream": "KV_vc-job",
        "filter_subject": "$KV.vc-job.team-a.>",
        "deliver_inbox": "_INBOX.alice.abc123",
    }
    return msgspec.convert(base | fields, ConsumerRequest)


def test_a_tenants_own_keys_are_delivered_to_its_own_inbox_and_nothing_else_is_taken_from_it() -> None:
    granted = grant_consumer("alice", ALICE, request(start_sequence=42))
    assert granted.stream == "KV_vc-job"
    assert granted.config == {
        "deliver_subject": "_INBOX.alice.abc123",
        "filter_subject": "$KV.vc-job.team-a.>",
        "ack_policy": "none",
        "idle_heartbeat": 5_000_000_000,
        "inactive_threshold": 30_000_000_000,
        "mem_storage": True,
        "replay_policy": "instant",
        "deliver_policy": "by_start_sequence",
        "opt_start_seq": 42,
    }
    listing = grant_consumer("alice", ALICE, request(filter_subject="$KV.vc-job.team-a-ci.*"))
    assert listing.config["deliver_policy"] == "last_per_subject" and "opt_start_seq" not in listing.config


@pytest.mark.parametrize(
    ("fields", "refusal", "message"),
    [
        pytest.param(
            {"deliver_inbox": "vc.rpc.admission.write.bob"}, ConsumerRefused, "deliver_inbox: ", id="service-subject"
        ),
        pytest.param(
            {"deliver_inbox": "_INBOX.bob.abc"}, ConsumerRefused, "must be _INBOX.alice.TOKEN", id="bobs-inbox"
        ),
        pytest.param({"deliver_inbox": "_INBOX.alice.*"}, ConsumerRefused, "deliver_inbox: ", id="wildcard-inbox"),
        pytest.param({"deliver_inbox": "_INBOX.alice.a.b"}, ConsumerRefused, "deliver_inbox: ", id="two-tokens"),
        pytest.param(
            {"filter_subject": "$KV.vc-job.team-b.>"}, ConsumerForbidden, "filter_subject: ", id="other-namespace"
        ),
        pytest.param({"filter_subject": "$KV.vc-job.>"}, ConsumerForbidden, "filter_subject: ", id="every-namespace"),
        pytest.param({"filter_subject": "$KV.vc-job.*.x"}, ConsumerForbidden, "filter_subject: ", id="any-namespace"),
        pytest.param({"filter_subject": "$KV.vc-job.team-a..x"}, ConsumerRefused, "is not a subject", id="empty-token"),
        pytest.param(
            {"stream": "KV_vc-secret", "filter_subject": "$KV.vc-secret.team-a.>"},
            ConsumerForbidden,
            "may not read stream 'KV_vc-secret'",
            id="secrets",
        ),
        pytest.param({"start_sequence": -1}, ConsumerRefused, "start_sequence: -1 must be 0 or more", id="negative"),
    ],
)
def test_anything_else_is_refused_naming_the_field_and_the_rule(
    fields: dict[str, object], refusal: type[ConsumerRefused], message: str
) -> None:
    with pytest.raises(refusal) as refused:
        grant_consumer("alice", ALICE, request(**fields))
    assert type(refused.value) is refusal and message in str(refused.value)


def test_the_history_and_cluster_scoped_kinds_are_read_as_the_identity_may() -> None:
    assert grant_consumer("alice", ALICE, request(stream="VC_EVT", filter_subject="vc.evt.*.team-a.>"))
    with pytest.raises(ConsumerForbidden):
        grant_consumer("alice", ALICE, request(stream="VC_EVT", filter_subject="vc.evt.job.team-b.x"))
    assert grant_consumer("alice", ALICE, request(stream="KV_vc-queue", filter_subject="$KV.vc-queue.>"))
    admin = grant_consumer(
        "admin", admin_grant(), request(filter_subject="$KV.vc-job.>", deliver_inbox="_INBOX.admin.x")
    )
    assert admin.config["filter_subject"] == "$KV.vc-job.>"


def test_a_request_that_does_not_decode_names_what_is_wrong() -> None:
    with pytest.raises(ConsumerRefused, match=r"request: .*deliver_subject"):
        decode_request(b'{"stream": "KV_vc-job", "filter_subject": "x", "deliver_inbox": "y", "deliver_subject": "z"}')
    with pytest.raises(ConsumerRefused, match="at most 4096"):
        decode_request(b" " * 5000)


@pytest.mark.parametrize(
    ("subject", "pattern", "within"),
    [
        ("a.b.c", "a.b.>", True),
        ("a.b.*", "a.b.>", True),
        ("a.b.>", "a.b.>", True),
        ("a.b", "a.b.>", False),
        ("a.*.c", "a.b.>", False),
        ("a.>", "a.b.>", False),
        ("a.b.c", "a.*.c", True),
        ("a.*.c", "a.*.c", True),
        ("a.b.c.d", "a.*.c", False),
    ],
)
def test_subject_within(subject: str, pattern: str, within: bool) -> None:
    assert subject_within(subject, pattern) is within

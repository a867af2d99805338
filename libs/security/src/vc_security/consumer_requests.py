"""The consumers admission makes for a tenant: what it may ask for, and the only shape it gets. Pure.

nats-server checks a consumer's filter against the creating client's permissions (the filter is in
the `CONSUMER.CREATE` subject) but not where it delivers: neither a push consumer's `deliver_subject`
nor a pull request's reply subject. So a tenant creates no consumer and pulls from none
(vc_security.identities); it asks admission on `vc.rpc.admission.consumers.<identity>` (the server
vouches for the identity) and gets a push consumer that:

- reads a stream the identity reads, filtered within its namespaces (`consumer_filters`);
- delivers only to the inbox it named, which must be one of the identity's own (`_INBOX.<identity>.X`),
  where nobody else may subscribe;
- acknowledges nothing and sends idle heartbeats (a reader learns of a lost delivery from the
  sequences, as with its own consumers: vc_bus.pull), and goes away once nobody listens.

Every other field is fixed here, not taken from the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from vc_security.identities import Grant, consumer_filters, inbox_prefix

MAX_REQUEST_BYTES: Final = 4096
IDLE_HEARTBEAT_S: Final = 5.0
INACTIVE_THRESHOLD_S: Final = 30.0
_INBOX_TOKEN: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ConsumerRefused(ValueError):
    """A malformed request: the message names the field and the rule."""


class ConsumerForbidden(ConsumerRefused):
    """A well-formed request for what the identity may not read."""


class ConsumerRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    stream: str
    filter_subject: str
    deliver_inbox: str
    start_sequence: int = 0  # 0: each key's newest message (a KV listing); else from this sequence on


@dataclass(frozen=True, slots=True)
class ConsumerGranted:
    stream: str
    config: dict[str, Any]  # the consumer's configuration, as JetStream's CONSUMER.CREATE takes it


def decode_request(data: bytes) -> ConsumerRequest:
    if len(data) > MAX_REQUEST_BYTES:
        raise ConsumerRefused(f"request: {len(data)} bytes; at most {MAX_REQUEST_BYTES}")
    try:
        return msgspec.json.decode(data, type=ConsumerRequest)
    except msgspec.DecodeError as exc:
        raise ConsumerRefused(f"request: {exc}") from None


def grant_consumer(identity: str, grant: Grant, request: ConsumerRequest) -> ConsumerGranted:
    """The consumer `identity` (holding `grant`) gets for `request`, or ConsumerRefused saying why."""
    if not is_subject(request.filter_subject):
        raise ConsumerRefused(f"filter_subject: {request.filter_subject!r} is not a subject")
    within = consumer_filters(grant).get(request.stream)
    if within is None:
        raise ConsumerForbidden(f"stream: identity {identity!r} may not read stream {request.stream!r}")
    if not any(subject_within(request.filter_subject, pattern) for pattern in within):
        raise ConsumerForbidden(
            f"filter_subject: {request.filter_subject!r} is not within what identity {identity!r} reads "
            f"({', '.join(within)})"
        )
    prefix = inbox_prefix(identity) + "."
    token = request.deliver_inbox.removeprefix(prefix)
    if not request.deliver_inbox.startswith(prefix) or not _INBOX_TOKEN.match(token):
        raise ConsumerRefused(
            f"deliver_inbox: {request.deliver_inbox!r} must be {prefix}TOKEN, TOKEN of letters, digits, '-' and '_'"
        )
    if request.start_sequence < 0:
        raise ConsumerRefused(f"start_sequence: {request.start_sequence} must be 0 or more")
    config: dict[str, Any] = {
        "deliver_subject": request.deliver_inbox,
        "filter_subject": request.filter_subject,
        "ack_policy": "none",
        "idle_heartbeat": int(IDLE_HEARTBEAT_S * 1e9),
        "inactive_threshold": int(INACTIVE_THRESHOLD_S * 1e9),
        "mem_storage": True,
        "replay_policy": "instant",
    }
    if request.start_sequence == 0:
        config["deliver_policy"] = "last_per_subject"
    else:
        config |= {"deliver_policy": "by_start_sequence", "opt_start_seq": request.start_sequence}
    return ConsumerGranted(request.stream, config)


def subject_within(subject: str, pattern: str) -> bool:
    """Whether every subject `subject` matches (it may hold wildcards itself) also matches `pattern`."""
    tokens, allowed = subject.split("."), pattern.split(".")
    for i, want in enumerate(allowed):
        if want == ">":
            return len(tokens) > i
        if i >= len(tokens):
            return False
        got = tokens[i]
        if got == ">" or (got == "*" and want != "*") or (want != "*" and got != want):
            return False
    return len(tokens) == len(allowed)


def is_subject(text: str) -> bool:
    """A subject a consumer may filter on: dot-separated non-empty tokens, no white space, `>` last."""
    tokens = text.split(".")
    return all(tokens) and not any(c.isspace() for c in text) and ">" not in tokens[:-1]

"""Open a JetStream key-value bucket, creating it the first time: the one way every service does it.

Several instances start at once, so two may both find the bucket missing and both create it. JetStream
answers the second creation with the existing bucket when the settings are equal, and with an error when
they differ (then the bucket that won is opened, as the first instance made it).

Buckets allow direct gets (`$JS.API.DIRECT.GET.<stream>.<key subject>`): the key is in the subject, so
the server's permissions can hold a reader to some keys (a tenant to its namespaces). A direct get may
be answered by any replica, a moment behind the leader, so only readers that ask for it use them
(vcctl); the services read through the leader (`STREAM.MSG.GET`), as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext, api
from nats.js.errors import (
    APIError,
    BadRequestError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NoStreamResponseError,
    NotFoundError,
    ServiceUnavailableError,
)
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE, KeyValue

from vc_core.retry import RetryPolicy

log = structlog.get_logger(__name__)
# How long start-up steps wait out JetStream being unavailable: a cluster electing its meta leader (at
# start, or after losing its leader) answers with timeouts, 503s, "no response from stream", or "stream
# not found" for a stream it has just been asked to create. Services started before the cluster was ready
# crashed on it and were restarted (seen in every 3-server chaos schedule); they wait now, and give up
# after this long.
OPEN_WAIT_S = 60.0
# What a JetStream request raises when no server answers it for now (NatsStore maps these to TemporaryError).
NO_ANSWER = (NatsTimeoutError, NoRespondersError, ServiceUnavailableError, NoStreamResponseError)
UNAVAILABLE = (*NO_ANSWER, NotFoundError)

T = TypeVar("T")


async def while_unavailable(what: str, attempt: Callable[[], Awaitable[T]], *, wait_s: float = OPEN_WAIT_S) -> T:
    """`attempt()`, retried with backoff while JetStream answers as unavailable, up to `wait_s`."""

    def on_retry(error: BaseException, failures: int, delay_s: float) -> None:
        log.warning("jetstream.unavailable", waiting_for=what, error=repr(error)[:200], retry_in_s=delay_s)

    policy = RetryPolicy(UNAVAILABLE, base_s=0.25, cap_s=2.0, deadline_s=wait_s)
    return await policy.call(attempt, sleep=asyncio.sleep, on_retry=on_retry)


_EXPECTED_LAST = "Nats-Expected-Last-Subject-Sequence"
_EXPECTED_LAST_OF = "Nats-Expected-Last-Subject-Sequence-Subject"  # nats-server 2.11 on; wildcards allowed
_WRONG_LAST_SEQUENCE = 10071
# A create races only other writes of the same name: after this many lost in a row it gives up.
_CREATE_ATTEMPTS = 8


class Bucket(KeyValue):
    """nats-py's KeyValue and two operations over a wildcard of keys, for a name kept under one of several
    keys (a pod's, in its PodGroup's shard: vc_proto.pod_shards)."""

    def __init__(self, *, name: str, stream: str, pre: str, js: JetStreamContext, direct: bool) -> None:
        super().__init__(name=name, stream=stream, pre=pre, js=js, direct=direct)
        self.stream = stream
        self.prefix = pre
        self.direct = direct
        self.jetstream = js

    async def last_of(self, key_filter: str) -> KeyValue.Entry:
        """The newest entry under the keys `key_filter` matches, its `key` the one it is under: one read
        (a last-by-subject get accepts a wildcard; a direct one keeps it in the request's subject, where
        the server's permissions hold a tenant to its namespaces). Raises KeyNotFoundError when there is
        none, KeyDeletedError (with the entry) when the newest is a deletion."""
        try:
            msg = await self.jetstream.get_msg(self.stream, subject=self.prefix + key_filter, direct=self.direct)
        except NotFoundError as exc:
            raise KeyNotFoundError from exc
        entry = KeyValue.Entry(
            bucket=self._name,
            key=(msg.subject or "")[len(self.prefix) :],
            value=msg.data or b"",
            revision=msg.seq,
            delta=None,
            created=None,
            operation=None,
        )
        operation = (msg.headers or {}).get(KV_OP)
        if operation in (KV_DEL, KV_PURGE):
            raise KeyDeletedError(entry, operation)
        return entry

    async def create_alone(self, key: str, value: bytes, key_filter: str) -> int:
        """Write `key` only while no key `key_filter` matches holds a value, atomically: the write expects
        the newest sequence under the whole filter, so a write to any of those keys in between refuses it.
        Raises KeyWrongLastSequenceError when one holds a value (or the race was lost _CREATE_ATTEMPTS
        times in a row)."""
        expected = 0  # the common case, a name never used: one write, no read
        for _ in range(_CREATE_ATTEMPTS):
            headers = {_EXPECTED_LAST: str(expected), _EXPECTED_LAST_OF: self.prefix + key_filter}
            try:
                return (await self.jetstream.publish(self.prefix + key, value, headers=headers)).seq
            except APIError as exc:
                if exc.err_code != _WRONG_LAST_SEQUENCE:
                    raise
            try:
                await self.last_of(key_filter)
            except KeyDeletedError as gone:  # a deleted one: expect its deletion to be the newest still
                expected = gone.entry.revision or 0
            except KeyNotFoundError:  # its entries were removed in between (a purge)
                expected = 0
            else:
                raise KeyWrongLastSequenceError(description=f"{key_filter} holds a value")
        raise KeyWrongLastSequenceError(description=f"{key_filter}: every attempt raced another write")


async def open_bucket(
    js: JetStreamContext,
    name: str,
    *,
    replicas: int = 1,
    ttl_s: float | None = None,
    history: int = 1,
    direct_gets: bool = False,
) -> Bucket:
    """The bucket `name`, made on file storage with these settings when it does not exist yet; its gets
    are direct when `direct_gets` and the bucket allows them (one made before it did does not). While
    JetStream is unavailable it retries, up to OPEN_WAIT_S."""

    def attempt() -> Awaitable[Bucket]:
        return _open_once(js, name, replicas=replicas, ttl_s=ttl_s, history=history, direct_gets=direct_gets)

    return await while_unavailable(f"bucket {name}", attempt)


async def _open_once(
    js: JetStreamContext, name: str, *, replicas: int, ttl_s: float | None, history: int, direct_gets: bool
) -> Bucket:
    stream = f"KV_{name}"
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        try:
            await js.create_key_value(
                bucket=name, history=history, storage=api.StorageType.FILE, replicas=replicas, ttl=ttl_s, direct=True
            )
        except BadRequestError:  # another instance created it in between, with other settings: theirs stands
            pass
        info = await js.stream_info(stream)
    direct = direct_gets and bool(info.config.allow_direct)
    return Bucket(name=name, stream=stream, pre=f"$KV.{name}.", js=js, direct=direct)

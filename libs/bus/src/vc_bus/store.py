"""The `nats` store backend: one JetStream KV bucket per kind, resourceVersion = KV revision.

Every write is a compare-and-set: create-if-absent, update-if-revision, delete-if-revision. Watches are
pull consumers on the bucket's stream that resume after the last revision they yielded, so a reconnect
or a server restart loses nothing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable
from typing import TypeVar

import structlog
from nats.aio.client import Client
from nats.js import api
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
)
from nats.js.kv import KeyValue
from prometheus_client import Counter

from vc_bus.kvwatch import watch_bucket
from vc_bus.objects import (
    check_identity,
    identity,
    mark_deleting,
    needs_graceful_delete,
    now_rfc3339,
    stamp_new,
    with_meta,
)
from vc_core.errors import AlreadyExists, Conflict, NotFound, PreconditionFailed
from vc_core.store import WatchEvent, WatchOp, collect_list
from vc_proto import codec, subjects
from vc_proto.kinds import KINDS, KubeObject

O = TypeVar("O", bound=KubeObject)
log = structlog.get_logger(__name__)

OPERATIONS = Counter(
    "tephra_store_operations_total", "Store requests this process made, by kind, operation and outcome",
    ["kind", "op", "outcome"],
)
_counters: dict[tuple[str, str, str], Counter] = {}  # labels() takes a lock and builds a key: memoise


def _count(kind: str, op: str, outcome: str = "ok") -> None:
    counter = _counters.get((kind, op, outcome))
    if counter is None:
        counter = _counters[(kind, op, outcome)] = OPERATIONS.labels(kind, op, outcome)
    counter.inc()


_GENERATE_NAME_ATTEMPTS = 8
_UNCONDITIONAL_DELETE_ATTEMPTS = 32
_WRONG_LAST = (10071, 10164)  # JetStream: wrong last sequence (per subject / per stream)


class NatsStore:
    """ObjectStore over JetStream KV. Call `await ensure()` once before use."""

    def __init__(self, nc: Client, *, replicas: int = 1, timeout: float = 10.0) -> None:
        self._nc = nc
        self._js = nc.jetstream(timeout=timeout)
        self._replicas = replicas
        self._kv: dict[str, KeyValue] = {}

    async def ensure(self, kinds: Iterable[str] = tuple(KINDS)) -> None:
        """Create the buckets that do not exist yet (idempotent)."""
        for kind in kinds:
            await self._bucket(kind)

    async def _bucket(self, kind: str) -> KeyValue:
        kv = self._kv.get(kind)
        if kv is not None:
            return kv
        name = subjects.bucket(kind)
        try:
            kv = await self._js.key_value(name)
        except BucketNotFoundError:
            kv = await self._js.create_key_value(
                bucket=name, history=1, storage=api.StorageType.FILE, replicas=self._replicas
            )
        self._kv[kind] = kv
        return kv

    async def get(self, kind: type[O], namespace: str | None, name: str) -> O:
        obj, _ = await self._get(kind.__name__, namespace, name)
        assert isinstance(obj, kind)
        return obj

    async def _get(self, kind: str, namespace: str | None, name: str) -> tuple[KubeObject, int]:
        kv = await self._bucket(kind)
        key = subjects.object_key(namespace, name)
        try:
            entry = await kv.get(key)
        except (KeyNotFoundError, KeyDeletedError) as exc:
            _count(kind, "get", "not_found")
            raise NotFound(kind, _display(namespace, name)) from exc
        _count(kind, "get")
        assert entry.value is not None
        return _decode(entry.value, entry.revision), entry.revision

    async def create(self, obj: O) -> O:
        kind, namespace, name = identity(obj)
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            stamped = stamp_new(obj, now=now_rfc3339())
            kind, namespace, name = identity(stamped)
            check_identity(kind, namespace, name)
            kv = await self._bucket(kind)
            try:
                revision = await kv.create(subjects.object_key(namespace, name), codec.encode(stamped))
            except KeyWrongLastSequenceError as exc:
                _count(kind, "create", "exists")
                if obj.metadata.name or not obj.metadata.generate_name:
                    raise AlreadyExists(kind, _display(namespace, name)) from exc
                continue
            _count(kind, "create")
            return with_meta(stamped, resource_version=str(revision))
        raise AlreadyExists(kind, _display(namespace, name))

    async def update(self, obj: O) -> O:
        kind, namespace, name = identity(obj)
        check_identity(kind, namespace, name)
        expected = _revision(obj)
        kv = await self._bucket(kind)
        data = codec.encode(with_meta(obj, resource_version=None))
        try:
            revision = await kv.update(subjects.object_key(namespace, name), data, last=expected)
        except KeyWrongLastSequenceError as exc:
            _count(kind, "update", "conflict")
            await self._get(kind, namespace, name)  # raises NotFound when it is gone
            raise Conflict(kind, _display(namespace, name), expected=expected) from exc
        _count(kind, "update")
        return with_meta(obj, resource_version=str(revision))

    async def delete(
        self,
        kind: type[O],
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        grace: bool = True,
    ) -> None:
        # Without a resourceVersion precondition the caller means "whatever is there now": a write that
        # lands between our read and our delete (a status update) is not a conflict, so read again.
        for attempt in range(_UNCONDITIONAL_DELETE_ATTEMPTS):
            try:
                await self._delete_once(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)
                return
            except PreconditionFailed:
                raise
            except Conflict:
                if resource_version is not None:
                    raise
                await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))  # let a burst of writes pass
        await self._delete_once(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)

    async def _delete_once(
        self, kind: type[O], namespace: str | None, name: str, *, resource_version: str | None, uid: str | None, grace: bool
    ) -> None:
        current, revision = await self._get(kind.__name__, namespace, name)
        display = _display(namespace, name)
        if resource_version is not None and int(resource_version) != revision:
            raise Conflict(kind.__name__, display, expected=int(resource_version))
        if uid is not None and current.metadata.uid != uid:
            raise PreconditionFailed(kind.__name__, display, expected=int(resource_version or revision))
        if grace and needs_graceful_delete(current):
            if current.metadata.deletion_timestamp is None:
                await self.update(mark_deleting(with_meta(current, resource_version=str(revision)), now=now_rfc3339()))
            return
        kv = await self._bucket(kind.__name__)
        try:
            await kv.delete(subjects.object_key(namespace, name), last=revision)
        except (KeyWrongLastSequenceError, APIError) as exc:
            # nats-py translates a lost compare-and-set into KeyWrongLastSequenceError on update only;
            # on delete it surfaces as a bare API error with JetStream's "wrong last sequence" codes.
            if isinstance(exc, APIError) and not isinstance(exc, KeyWrongLastSequenceError) and exc.err_code not in _WRONG_LAST:
                raise
            _count(kind.__name__, "delete", "conflict")
            raise Conflict(kind.__name__, display, expected=revision) from exc
        _count(kind.__name__, "delete")

    async def list(self, kind: type[O], namespace: str | None = None) -> tuple[list[O], int]:
        return await collect_list(self.watch(kind, namespace=namespace), kind)

    async def watch(
        self, kind: type[O], *, namespace: str | None = None, from_revision: int = 0
    ) -> AsyncIterator[WatchEvent]:
        await self._bucket(kind.__name__)
        key_filter = subjects.namespace_filter(namespace)
        async for entry in watch_bucket(self._js, subjects.bucket(kind.__name__), key_filter, from_revision):
            if entry.op is WatchOp.PUT:
                namespace_, name = subjects.split_key(entry.key)
                yield WatchEvent(WatchOp.PUT, entry.revision, namespace_, name, _decode(entry.value, entry.revision))
            elif entry.op is WatchOp.DELETE:
                namespace_, name = subjects.split_key(entry.key)
                yield WatchEvent(WatchOp.DELETE, entry.revision, namespace_, name)
            else:
                yield WatchEvent(WatchOp.SYNCED, entry.revision)


def _decode(data: bytes, revision: int) -> KubeObject:
    return with_meta(codec.decode_object(data), resource_version=str(revision))


def _revision(obj: KubeObject) -> int:
    rv = obj.metadata.resource_version
    if not rv:
        raise Conflict(type(obj).__name__, obj.metadata.name or "", expected=None)
    return int(rv)


def _display(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


"""The `nats` store backend: one JetStream KV bucket per kind, resourceVersion = KV revision.

Every write is a compare-and-set: create-if-absent, update-if-revision, delete-if-revision. Watches are
pull consumers on the bucket's stream that resume after the last revision they yielded, so a reconnect
or a server restart loses nothing.

Anyone who reaches NATS can put bytes into a bucket, so every value read is checked here, once, for
every reader: it must decode, be of the bucket's kind and carry the identity of its key. A watch (and
so a list) skips a value that is not, after logging and counting it; `get` raises CorruptObject, never
NotFound (a bad value is not an absence), and a delete without preconditions removes it.

A request no server answers (down, reconnecting, or its stream electing a leader) raises the port's
TemporaryError, not the transport's exception: callers retry it as any temporary failure (an API
reply says "unavailable"; a dispatcher backs off).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator, Mapping
from typing import TypeVar

import structlog
from nats.aio.client import Client
from nats.js.errors import (
    APIError,
    InvalidKeyError,
    KeyDeletedError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
)
from prometheus_client import Counter

from vc_bus.binding import bound_pod, required_uid
from vc_bus.buckets import NO_ANSWER, Bucket, open_bucket
from vc_bus.decoding import UNDECODABLE, CorruptObject, describe, report_undecodable
from vc_bus.kvwatch import watch_bucket
from vc_bus.objects import (
    check_identity,
    group_changed,
    identity,
    mark_deleting,
    moves_group,
    name_filter,
    needs_graceful_delete,
    now_rfc3339,
    stamp_new,
    storage_key,
    with_meta,
)
from vc_core.errors import AlreadyExists, Conflict, InvalidObject, NotFound, PreconditionFailed, TemporaryError
from vc_core.retry import RetryPolicy
from vc_core.store import WatchEvent, WatchOp, collect_list, refuse_unlistable_namespace
from vc_proto import codec, subjects
from vc_proto.core import Pod
from vc_proto.kinds import KINDS, KubeObject
from vc_proto.pod_shards import group_of
from vc_proto.selectors import Selector

ObjT = TypeVar("ObjT", bound=KubeObject)
log = structlog.get_logger(__name__)


@contextlib.contextmanager
def _temporary_when_unavailable(operation: str) -> Iterator[None]:
    try:
        yield
    except NO_ANSWER as exc:
        reason = str(exc) or type(exc).__name__
        # A write may have been made all the same (its answer is what was lost): a retry of a create
        # with generateName would make a second object, so the caller is told to look first.
        outcome = "retry" if operation == "get" else "it may have been applied: read before retrying"
        raise TemporaryError(f"store {operation}: NATS did not answer ({reason}); {outcome}") from exc


OPERATIONS = Counter(
    "tephra_store_operations_total",
    "Store requests this process made, by kind, operation and outcome",
    ["kind", "op", "outcome"],
)
_counters: dict[tuple[str, str, str], Counter] = {}  # labels() takes a lock and builds a key: memoise


def _count(kind: str, op: str, outcome: str = "ok") -> None:
    counter = _counters.get((kind, op, outcome))
    if counter is None:
        counter = _counters[(kind, op, outcome)] = OPERATIONS.labels(kind, op, outcome)
    counter.inc()


_GENERATE_NAME_ATTEMPTS = 8
# Kinds whose objects expire on their own, counted from their last write: Events live an hour, as the
# apiserver keeps them (--event-ttl), so a busy system's Events do not grow without bound.
BUCKET_TTL_S: dict[str, float] = {"Event": 3600.0}
# A bind lost to another write of the pod (node-sim's, the job controller's) is tried again on the pod as
# stored now, at once and up to 16 times: the rules of binding.py decide whether it may still bind.
_BIND_RACE = RetryPolicy((Conflict,), base_s=0.0005, cap_s=0.004, attempts=16)
# A delete without a resourceVersion means "whatever is there now": a write that lands between its read and
# its delete (a status update) is not a conflict, so it reads again, up to 33 times, letting a burst of
# writes pass; a uid precondition that failed is another object, never retried.
_UNCONDITIONAL_DELETE_RACE = RetryPolicy(
    (Conflict,), base_s=0.002, cap_s=0.064, attempts=33, jitter=0.9, never=(PreconditionFailed,)
)
_WRONG_LAST = (10071, 10164)  # JetStream: wrong last sequence (per subject / per stream)


class NatsStore:
    """ObjectStore over JetStream KV. Call `await ensure()` once before use."""

    def __init__(self, nc: Client, *, replicas: int = 1, timeout: float = 10.0, direct_gets: bool = False) -> None:
        """`direct_gets`: read single objects with DIRECT.GET (the key in the subject, as a reader held to
        some namespaces must; any replica answers) instead of through the stream's leader."""
        self._nc = nc
        self._js = nc.jetstream(timeout=timeout)
        self._replicas = replicas
        self._direct_gets = direct_gets
        self._kv: dict[str, Bucket] = {}

    async def ensure(self, kinds: Iterable[str] = tuple(KINDS)) -> None:
        """Create the buckets that do not exist yet (idempotent)."""
        for kind in kinds:
            await self._bucket(kind)

    async def _bucket(self, kind: str) -> Bucket:
        kv = self._kv.get(kind)
        if kv is not None:
            return kv
        kv = await open_bucket(
            self._js,
            subjects.bucket(kind),
            replicas=self._replicas,
            ttl_s=BUCKET_TTL_S.get(kind),
            direct_gets=self._direct_gets,
        )
        self._kv[kind] = kv
        return kv

    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        with _temporary_when_unavailable("get"):
            obj, _, _ = await self._get(kind.__name__, namespace, name)
            assert isinstance(obj, kind)
            return obj

    async def _get(self, kind: str, namespace: str | None, name: str) -> tuple[KubeObject, int, str]:
        """The object, its revision and the key it is under (a pod's name does not tell its shard)."""
        kv = await self._bucket(kind)
        key = name_filter(kind, namespace, name)
        try:
            if kind == "Pod":
                check_identity(kind, namespace, name)  # a wildcard read goes by the subject: only a valid one
                entry = await kv.last_of(key)
            else:
                entry = await kv.get(key)
        except (KeyNotFoundError, KeyDeletedError, InvalidKeyError, InvalidObject) as exc:
            # A name no key can hold (" ", "+1") names no stored object (found by fuzzing)
            _count(kind, "get", "not_found")
            raise NotFound(kind, _display(namespace, name)) from exc
        _count(kind, "get")
        key = entry.key
        revision = entry.revision or 0
        try:
            return decode_stored(kind, key, entry.value or b"", revision), revision, key
        except CorruptObject as exc:
            report_undecodable(source=subjects.bucket(kind), kind=kind, error=exc.reason, key=key, revision=revision)
            raise

    async def create(self, obj: ObjT) -> ObjT:
        with _temporary_when_unavailable("create"):
            kind, namespace, name = identity(obj)
            for _ in range(_GENERATE_NAME_ATTEMPTS):
                stamped = stamp_new(obj, now=now_rfc3339())
                kind, namespace, name = identity(stamped)
                check_identity(kind, namespace, name)
                kv = await self._bucket(kind)
                key, data = storage_key(stamped), codec.encode(stamped)
                try:
                    if kind == "Pod":  # not while the name is held under another shard's key
                        revision = await kv.create_alone(key, data, name_filter(kind, namespace, name))
                    else:
                        revision = await kv.create(key, data)
                except KeyWrongLastSequenceError as exc:
                    _count(kind, "create", "exists")
                    if obj.metadata.name or not obj.metadata.generate_name:
                        raise AlreadyExists(kind, _display(namespace, name)) from exc
                    continue
                _count(kind, "create")
                return with_meta(stamped, resource_version=str(revision))
            raise AlreadyExists(kind, _display(namespace, name))

    async def update(self, obj: ObjT) -> ObjT:
        with _temporary_when_unavailable("update"):
            kind, namespace, name = identity(obj)
            check_identity(kind, namespace, name)
            expected = _revision(obj)
            kv = await self._bucket(kind)
            data = codec.encode(with_meta(obj, resource_version=None))
            key = storage_key(obj)
            try:
                revision = await kv.update(key, data, last=expected)
            except KeyWrongLastSequenceError as exc:
                _count(kind, "update", "conflict")
                stored, _, stored_key = await self._get(kind, namespace, name)  # raises NotFound when gone
                if stored_key != key and moves_group(stored, obj):
                    raise group_changed(obj) from exc
                raise Conflict(kind, _display(namespace, name), expected=expected) from exc
            _count(kind, "update")
            return with_meta(obj, resource_version=str(revision))

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        """A compare-and-set of the bound pod: first on the caller's copy (one write when it is current),
        then, after each lost race, on the stored pod once it is checked again (binding.py's rules).
        Made of `update` and `get`: a request no server answers raises their TemporaryError."""
        uid = required_uid(pod)
        current = pod

        async def once() -> None:
            nonlocal current
            try:
                await self.update(bound_pod(current, uid, node, annotations))
            except Conflict:
                current = await self.get(Pod, pod.metadata.namespace, pod.metadata.name or "")
                raise

        await _BIND_RACE.call(once, sleep=asyncio.sleep)

    async def delete(
        self,
        kind: type[ObjT],
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None = None,
        uid: str | None = None,
        grace: bool = True,
    ) -> None:
        with _temporary_when_unavailable("delete"):

            def once() -> Awaitable[None]:
                return self._delete_once(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)

            if resource_version is not None:  # the caller's precondition: a conflict is the caller's to handle
                await once()
            else:
                await _UNCONDITIONAL_DELETE_RACE.call(once, sleep=asyncio.sleep)

    async def _delete_once(
        self,
        kind: type[ObjT],
        namespace: str | None,
        name: str,
        *,
        resource_version: str | None,
        uid: str | None,
        grace: bool,
    ) -> None:
        display = _display(namespace, name)
        try:
            current, revision, key = await self._get(kind.__name__, namespace, name)
        except CorruptObject as exc:
            if uid is not None or (resource_version is not None and int(resource_version) != exc.revision):
                raise  # a precondition cannot be checked against a value that is not an object
            await self._delete_at(kind.__name__, exc.key, display, exc.revision)
            log.warning("store.corrupt_deleted", kind=kind.__name__, key=exc.key, revision=exc.revision)
            return
        if resource_version is not None and int(resource_version) != revision:
            raise Conflict(kind.__name__, display, expected=int(resource_version))
        if uid is not None and current.metadata.uid != uid:
            raise PreconditionFailed(kind.__name__, display, expected=int(resource_version or revision))
        if grace and needs_graceful_delete(current):
            if current.metadata.deletion_timestamp is None:
                await self.update(mark_deleting(with_meta(current, resource_version=str(revision)), now=now_rfc3339()))
            return
        await self._delete_at(kind.__name__, key, display, revision)

    async def _delete_at(self, kind: str, key: str, display: str, revision: int) -> None:
        kv = await self._bucket(kind)
        try:
            await kv.delete(key, last=revision)
        except (KeyWrongLastSequenceError, APIError) as exc:
            # nats-py translates a lost compare-and-set into KeyWrongLastSequenceError on update only;
            # on delete it surfaces as a bare API error with JetStream's "wrong last sequence" codes.
            if (
                isinstance(exc, APIError)
                and not isinstance(exc, KeyWrongLastSequenceError)
                and exc.err_code not in _WRONG_LAST
            ):
                raise
            _count(kind, "delete", "conflict")
            raise Conflict(kind, display, expected=revision) from exc
        _count(kind, "delete")

    async def list(self, kind: type[ObjT], namespace: str | None = None) -> tuple[list[ObjT], int]:
        return await collect_list(self.watch(kind, namespace=namespace), kind)

    async def watch(
        self,
        kind: type[ObjT],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        refuse_unlistable_namespace(namespace)
        await self._bucket(kind.__name__)
        key_filter = subjects.namespace_filter(namespace)
        bucket = subjects.bucket(kind.__name__)
        async for entry in watch_bucket(self._js, bucket, key_filter, from_revision, select=select):
            if entry.op is WatchOp.PUT:
                try:
                    obj = decode_stored(kind.__name__, entry.key, entry.value, entry.revision)
                except CorruptObject as exc:
                    where = {"key": entry.key, "revision": entry.revision}
                    report_undecodable(source=bucket, kind=kind.__name__, error=exc.reason, **where)
                    continue  # readers see only objects; the watch resumes after it all the same
                namespace_, name = subjects.split_key(entry.key)
                yield WatchEvent(WatchOp.PUT, entry.revision, namespace_, name, obj)
            elif entry.op is WatchOp.DELETE:
                namespace_, name = subjects.split_key(entry.key)
                yield WatchEvent(WatchOp.DELETE, entry.revision, namespace_, name)
            else:
                yield WatchEvent(WatchOp.SYNCED, entry.revision)


def decode_stored(
    kind: str, key: str, data: bytes, revision: int, *, keep_resource_version: bool = False
) -> KubeObject:
    """The object stored under `key` in `kind`'s bucket, with its revision as resourceVersion (or, for a
    mirror of the apiserver, the resourceVersion it carries).

    Raises CorruptObject when the bytes are not an object, are another kind, or name another key.
    """
    try:
        obj = codec.decode_object(data)
    except UNDECODABLE as exc:
        raise CorruptObject(kind, key, revision, describe(exc)) from exc
    found = type(obj).__name__
    if found != kind:
        raise CorruptObject(kind, key, revision, f"it is a {found}")
    if storage_key(obj) != key:
        _, namespace, name = identity(obj)
        if isinstance(obj, Pod) and subjects.split_key(key) == (namespace, name):  # under another shard
            raise CorruptObject(kind, key, revision, f"its PodGroup {group_of(obj)!r} is in another shard")
        raise CorruptObject(kind, key, revision, f"its metadata names {_display(namespace, name)!r}")
    return obj if keep_resource_version else with_meta(obj, resource_version=str(revision))


def _revision(obj: KubeObject) -> int:
    rv = obj.metadata.resource_version
    if not rv:
        raise Conflict(type(obj).__name__, obj.metadata.name or "", expected=None)
    return int(rv)


def _display(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name

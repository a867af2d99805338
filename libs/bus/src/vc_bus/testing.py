"""In-memory fakes for unit tests of pure-ish logic. They pass the same contract suite as the real
adapters (tests/contract/), so they cannot drift from NATS semantics:

- per-kind revisions increase like a KV bucket's stream sequence;
- a watch from revision R sees each key's newest state after R (superseded values are gone, as with
  KV history 1), deletes as tombstones, then live changes.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from vc_bus.binding import bound_pod, required_uid
from vc_bus.decoding import selected
from vc_bus.objects import (
    check_identity,
    group_changed,
    identity,
    mark_deleting,
    moves_group,
    needs_graceful_delete,
    now_rfc3339,
    stamp_new,
    with_meta,
)
from vc_core.errors import AlreadyExists, Conflict, NotFound, PreconditionFailed
from vc_core.store import ObjectStore, WatchEvent, WatchOp, refuse_unlistable_namespace
from vc_proto import codec
from vc_proto.core import Pod
from vc_proto.kinds import KubeObject
from vc_proto.selectors import Selector

ObjT = TypeVar("ObjT", bound=KubeObject)
Key = tuple[str | None, str]


@dataclass
class _Entry:
    revision: int
    obj: KubeObject | None  # None = tombstone


@dataclass
class _Bucket:
    revision: int = 0
    entries: dict[Key, _Entry] = field(default_factory=dict)
    changed: asyncio.Condition | None = None


class MemoryStore:
    def __init__(self) -> None:
        self._buckets: dict[str, _Bucket] = {}

    def _bucket(self, kind: str) -> _Bucket:
        bucket = self._buckets.get(kind)
        if bucket is None:
            bucket = self._buckets[kind] = _Bucket()
        return bucket

    async def _commit(self, kind: str, key: Key, obj: KubeObject | None) -> int:
        bucket = self._bucket(kind)
        bucket.revision += 1
        bucket.entries[key] = _Entry(bucket.revision, obj)
        if bucket.changed is None:
            bucket.changed = asyncio.Condition()
        async with bucket.changed:
            bucket.changed.notify_all()
        return bucket.revision

    def _live(self, kind: str, key: Key) -> _Entry:
        entry = self._bucket(kind).entries.get(key)
        if entry is None or entry.obj is None:
            raise NotFound(kind, "/".join(k for k in key if k))
        return entry

    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        entry = self._live(kind.__name__, (namespace, name))
        obj = with_meta(entry.obj, resource_version=str(entry.revision))  # type: ignore[type-var]
        assert isinstance(obj, kind)
        return obj

    async def create(self, obj: ObjT) -> ObjT:
        stamped = stamp_new(obj, now=now_rfc3339())
        kind, namespace, name = identity(stamped)
        check_identity(kind, namespace, name)
        entry = self._bucket(kind).entries.get((namespace, name))
        if entry is not None and entry.obj is not None:
            raise AlreadyExists(kind, f"{namespace}/{name}" if namespace else name)
        revision = await self._commit(kind, (namespace, name), stamped)
        return with_meta(stamped, resource_version=str(revision))

    async def update(self, obj: ObjT) -> ObjT:
        kind, namespace, name = identity(obj)
        check_identity(kind, namespace, name)
        entry = self._live(kind, (namespace, name))
        if entry.obj is not None and moves_group(entry.obj, obj):
            raise group_changed(obj)  # as NatsStore: the pod's key is its group's
        expected = int(obj.metadata.resource_version or 0)
        if entry.revision != expected:
            raise Conflict(kind, name, expected=expected)
        revision = await self._commit(kind, (namespace, name), with_meta(obj, resource_version=None))
        return with_meta(obj, resource_version=str(revision))

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        """Checked and written with no await in between: atomic, as one compare-and-set."""
        uid = required_uid(pod)
        current = await self.get(Pod, pod.metadata.namespace, pod.metadata.name or "")
        await self.update(bound_pod(current, uid, node, annotations))

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
        entry = self._live(kind.__name__, (namespace, name))
        current = entry.obj
        assert current is not None
        if resource_version is not None and int(resource_version) != entry.revision:
            raise Conflict(kind.__name__, name, expected=int(resource_version))
        if uid is not None and current.metadata.uid != uid:
            raise PreconditionFailed(kind.__name__, name, expected=entry.revision)
        if grace and needs_graceful_delete(current):
            if current.metadata.deletion_timestamp is None:
                marked = mark_deleting(with_meta(current, resource_version=str(entry.revision)), now=now_rfc3339())
                await self.update(marked)
            return
        await self._commit(kind.__name__, (namespace, name), None)

    async def list(self, kind: type[ObjT], namespace: str | None = None) -> tuple[list[ObjT], int]:
        refuse_unlistable_namespace(namespace)
        bucket = self._bucket(kind.__name__)
        items = [
            with_meta(e.obj, resource_version=str(e.revision))
            for (ns, _), e in sorted(bucket.entries.items(), key=lambda kv: kv[1].revision)
            if e.obj is not None and (namespace is None or ns == namespace)
        ]
        return items, bucket.revision  # type: ignore[return-value]

    async def watch(
        self,
        kind: type[ObjT],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        refuse_unlistable_namespace(namespace)
        bucket = self._bucket(kind.__name__)
        if bucket.changed is None:
            bucket.changed = asyncio.Condition()
        last = from_revision
        synced = from_revision > 0
        while True:
            for event in self._after(bucket, namespace, last, select):
                last = event.revision
                yield event
            if not synced:
                synced = True
                yield WatchEvent(WatchOp.SYNCED, max(last, bucket.revision))
            async with bucket.changed:
                while bucket.revision <= last:
                    await bucket.changed.wait()

    @staticmethod
    def _after(
        bucket: _Bucket, namespace: str | None, revision: int, select: Selector | None
    ) -> builtins.list[WatchEvent]:
        newer = sorted(
            (
                (key, e)
                for key, e in bucket.entries.items()
                if e.revision > revision and (namespace is None or key[0] == namespace)
            ),
            key=lambda item: item[1].revision,
        )
        events = []
        for (ns, name), entry in newer:
            if entry.obj is None or (
                select is not None and not selected(select, codec.encode(entry.obj), source="memory")
            ):
                events.append(WatchEvent(WatchOp.DELETE, entry.revision, ns, name))
            else:
                obj = with_meta(entry.obj, resource_version=str(entry.revision))
                events.append(WatchEvent(WatchOp.PUT, entry.revision, ns, name, obj))
        return events


_: ObjectStore = MemoryStore()

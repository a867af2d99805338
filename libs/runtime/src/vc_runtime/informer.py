"""A local cache of one kind, fed by a store watch (client-go's informer, reduced to what we use).

`on_change(old, new)` runs after each change (old None = added, new None = deleted), so the owner
can submit the keys it concerns to its dispatcher. `synced` is set once the initial state has been
replayed: nothing may act on the *absence* of an object before that (GC discipline).

The store's watch yields only objects of the kind (values that are not are skipped there); `on_change`
is a handler boundary on top: an object that makes it raise is logged and counted and the cache goes on,
because one object anyone could write must not stop a service's view of all the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

from vc_bus.decoding import report_unprocessable
from vc_core.store import ObjectStore, WatchEvent, WatchOp
from vc_proto import codec
from vc_proto.kinds import KubeObject
from vc_proto.selectors import Selector
from vc_runtime.aio import until

ObjT = TypeVar("ObjT", bound=KubeObject)
ObjectKey = tuple[str | None, str]
OnChange = Callable[[ObjT | None, ObjT | None], None]
Keep = Callable[[ObjT], ObjT]


def revision_of(obj: KubeObject) -> int:
    """The store revision an object was read or written at (its resourceVersion; 0 before it is stored)."""
    return int(obj.metadata.resource_version or 0)


def key_of(obj: KubeObject) -> ObjectKey:
    return (obj.metadata.namespace or None, obj.metadata.name or "")


class Informer(Generic[ObjT]):
    def __init__(
        self,
        store: ObjectStore,
        kind: type[ObjT],
        *,
        on_change: OnChange[ObjT] | None = None,
        select: Selector | None = None,
        keep: Keep[ObjT] | None = None,
    ) -> None:
        """`select`: the objects to cache (ObjectStore.watch); one that leaves the selection is dropped.
        `keep`: what of each object to cache (the fields the owner reads; a cache of many objects holds
        that instead of the whole object). The owner then never writes a cached object back: it reads
        the stored one first."""
        self._store = store
        self.kind = kind
        self._select = select
        self._keep = keep
        self._on_change = on_change
        self.items: dict[ObjectKey, ObjT] = {}
        # Objects this instance's own write took out of the selection, at that write's revision: until
        # the key's next watch event that is not older (a delete: the write's echo, or a deletion; or a
        # newer version), an older version the watch delivers late is not taken back. (A delete clears
        # the mark whatever its revision: watch revisions are not comparable across stores, a mirror's
        # count its own entries; a late delete older than the write is a narrower case left open.)
        self._left: dict[ObjectKey, int] = {}
        self.synced = asyncio.Event()

    def get(self, namespace: str | None, name: str) -> ObjT | None:
        return self.items.get((namespace or None, name))

    def remember(self, obj: ObjT) -> None:
        """Record an object this instance just wrote, so the next pass does not read a stale copy. One the
        write took out of the selection is dropped (the watch's echo may come first, or later: either
        way the cache ends without it), and a version no newer than that write, which a lagging watch may
        still deliver, is not taken back."""
        key = key_of(obj)
        if self._select is not None and not self._select(codec.encode(obj)):
            self._left[key] = max(revision_of(obj), self._left.get(key, 0))
            self._delete(key)
            return
        self._put(key, obj)

    def forget(self, namespace: str | None, name: str) -> None:
        """Record a deletion this instance just made."""
        self._delete((namespace or None, name))

    async def run(self, shutdown: asyncio.Event) -> None:
        async for event in until(shutdown, self._store.watch(self.kind, select=self._select)):
            self.apply(event)

    def apply(self, event: WatchEvent) -> None:
        """One event of the store's watch of the kind."""
        if event.op is WatchOp.SYNCED:
            self.synced.set()
        elif event.op is WatchOp.PUT and isinstance(event.obj, self.kind):
            self._put((event.namespace or None, event.name), event.obj)
        else:
            key = (event.namespace or None, event.name)
            self._left.pop(key, None)  # the echo of the write that took it out, or its deletion
            self._delete(key)

    def _put(self, key: ObjectKey, obj: ObjT) -> None:
        left = self._left.get(key)
        if left is not None:
            if revision_of(obj) <= left:
                return  # a version from before our own write took it out of the selection
            del self._left[key]  # a newer version, selected again
        old = self.items.get(key)
        if old is not None and revision_of(old) >= revision_of(obj):
            return  # an echo of our own write, or an older state arriving late
        if self._keep is not None:
            obj = self._keep(obj)
        self.items[key] = obj
        self._notify(key, old, obj)

    def _delete(self, key: ObjectKey) -> None:
        old = self.items.pop(key, None)
        if old is not None:
            self._notify(key, old, None)

    def _notify(self, key: ObjectKey, old: ObjT | None, new: ObjT | None) -> None:
        if self._on_change is None:
            return
        try:
            self._on_change(old, new)
        except Exception as exc:  # handler boundary (see the module docstring)
            kind = self.kind.__name__
            where = {"key": "/".join(k for k in key if k), "revision": revision_of(new or old)}  # type: ignore[arg-type]
            report_unprocessable(source=f"informer:{kind}", kind=kind, error=exc, **where)

"""One writer per key: the sole owner, and a store whose writes stop at the membership fence.

The ownership port itself (`Ownership`, re-exported here) is vc_core.ownership's;
`vc_runtime.membership.Membership` is the production implementation; `SoleOwner` serves a single
instance (and unit tests). Every write goes through `FencedStore`, so an instance whose lease has
lapsed (paused, partitioned) writes nothing even if a handler was already past its ownership check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import TypeVar

from vc_core.errors import Fenced
from vc_core.ownership import Ownership
from vc_core.store import ObjectStore, WatchEvent
from vc_proto.core import Pod
from vc_proto.kinds import KubeObject
from vc_proto.selectors import Selector

__all__ = ["FencedStore", "Ownership", "SoleOwner"]
ObjT = TypeVar("ObjT", bound=KubeObject)


class SoleOwner:
    """The only instance: owns every key, may always write, never changes (an `Ownership`)."""

    def __init__(self, instance: str = "sole") -> None:
        self.instance = instance
        self.epoch = 1
        self.members: tuple[str, ...] = (instance,)  # the Ownership protocol's type (a settable attribute)

    def owns(self, key: str) -> bool:
        return True

    def can_write(self) -> bool:
        return True

    async def wait_changed(self) -> None:
        await asyncio.Event().wait()


class FencedStore:
    """Reads pass through; each write first checks the fence."""

    def __init__(self, store: ObjectStore, ownership: Ownership) -> None:
        self._store = store
        self._ownership = ownership

    def _check(self, kind: str, name: str | None) -> None:
        if not self._ownership.can_write():
            raise Fenced(f"{kind} {name}")

    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        return await self._store.get(kind, namespace, name)

    async def create(self, obj: ObjT) -> ObjT:
        self._check(type(obj).__name__, obj.metadata.name)
        return await self._store.create(obj)

    async def update(self, obj: ObjT) -> ObjT:
        self._check(type(obj).__name__, obj.metadata.name)
        return await self._store.update(obj)

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        self._check("Pod", pod.metadata.name)
        await self._store.bind(pod, node, annotations=annotations)

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
        self._check(kind.__name__, name)
        await self._store.delete(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)

    async def list(self, kind: type[ObjT], namespace: str | None = None) -> tuple[list[ObjT], int]:
        return await self._store.list(kind, namespace)

    def watch(
        self,
        kind: type[ObjT],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        return self._store.watch(kind, namespace=namespace, from_revision=from_revision, select=select)

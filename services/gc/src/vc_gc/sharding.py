"""One writer per key: the ownership port, and a store whose writes stop at the membership fence.

`vc_runtime.membership.Membership` is the production implementation; `SoleOwner` serves a single
instance (and unit tests). Every write goes through `FencedStore`, so an instance whose lease has
lapsed (paused, partitioned) writes nothing even if a handler was already past its ownership check.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, TypeVar

from vc_core.errors import TemporaryError
from vc_core.store import ObjectStore
from vc_proto.kinds import KubeObject

ObjT = TypeVar("ObjT", bound=KubeObject)

# How long a fenced write waits before its retry: about one lease renewal.
FENCE_RETRY_S = 1.0


class Ownership(Protocol):
    def owns(self, key: str) -> bool: ...

    def can_write(self) -> bool: ...

    async def wait_changed(self) -> None: ...


class SoleOwner:
    """The only instance: owns every key, may always write, never changes."""

    def owns(self, key: str) -> bool:
        return True

    def can_write(self) -> bool:
        return True

    async def wait_changed(self) -> None:
        await asyncio.Event().wait()


class Fenced(TemporaryError):
    """This instance may not write now (its lease lapsed); the work is retried once it may."""

    def __init__(self) -> None:
        super().__init__("write fenced: this instance's membership lease has lapsed", delay=FENCE_RETRY_S)


class FencedStore:
    """Reads pass through; each write first checks the fence."""

    def __init__(self, store: ObjectStore, ownership: Ownership) -> None:
        self._store = store
        self._ownership = ownership

    def _check(self) -> None:
        if not self._ownership.can_write():
            raise Fenced()

    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        return await self._store.get(kind, namespace, name)

    async def create(self, obj: ObjT) -> ObjT:
        self._check()
        return await self._store.create(obj)

    async def update(self, obj: ObjT) -> ObjT:
        self._check()
        return await self._store.update(obj)

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
        self._check()
        await self._store.delete(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)

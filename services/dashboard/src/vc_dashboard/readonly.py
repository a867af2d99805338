"""The store as the dashboard may use it: read and watch, never write.

The dashboard shows the shared cache and must never change it; this wrapper makes that a property of
the code rather than a habit: any write raises before it reaches the bus.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TypeVar

from vc_core.store import ObjectStore, WatchEvent
from vc_proto.core import Pod
from vc_proto.kinds import KubeObject
from vc_proto.selectors import Selector

O = TypeVar("O", bound=KubeObject)  # noqa: E741


class ReadOnlyStoreError(PermissionError):
    def __init__(self, operation: str) -> None:
        super().__init__(f"vc-dashboard is read-only: {operation} refused")
        self.operation = operation


class ReadOnlyStore:
    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    async def get(self, kind: type[O], namespace: str | None, name: str) -> O:
        return await self._store.get(kind, namespace, name)

    async def list(self, kind: type[O], namespace: str | None = None) -> tuple[list[O], int]:
        return await self._store.list(kind, namespace)

    def watch(
        self,
        kind: type[O],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        return self._store.watch(kind, namespace=namespace, from_revision=from_revision, select=select)

    async def create(self, obj: O) -> O:
        raise ReadOnlyStoreError("create")

    async def update(self, obj: O) -> O:
        raise ReadOnlyStoreError("update")

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        raise ReadOnlyStoreError("bind")

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
        raise ReadOnlyStoreError("delete")


_: ObjectStore = ReadOnlyStore.__new__(ReadOnlyStore)  # checked against the port by mypy

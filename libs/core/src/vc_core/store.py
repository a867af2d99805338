"""The store port: Kubernetes-style objects with compare-and-set writes, list and watch.

Two adapters implement it: `vc_bus.store.NatsStore` (JetStream KV, the embedded default) and the
`kube` adapter (a real API server). `vc_bus.testing.MemoryStore` is the in-memory fake for unit tests;
all three run the same contract suite in tests/contract/.

`metadata.resourceVersion` is the adapter's revision: `update` and `delete` with a resourceVersion are
compare-and-set; a lost race raises `Conflict`. Create is create-if-absent (`AlreadyExists`). `bind` is
fenced like Kubernetes' pods/binding: on the pod's uid, and on the pod being unbound and not deleting.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from vc_core.errors import InvalidObject
from vc_proto import subjects
from vc_proto.core import Pod
from vc_proto.kinds import KubeObject
from vc_proto.selectors import Selector

ObjT = TypeVar("ObjT", bound=KubeObject)


class WatchOp(enum.Enum):
    PUT = "PUT"
    DELETE = "DELETE"
    # The initial state up to the list revision has been delivered: the cache is synced.
    SYNCED = "SYNCED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    op: WatchOp
    revision: int
    namespace: str | None = None
    name: str = ""
    # The object as it now is (PUT), or None for DELETE and SYNCED.
    obj: KubeObject | None = None


@runtime_checkable
class VersionMemory(Protocol):
    """A store whose writes need a diff base (the kube backend's merge patches): told of a version read
    elsewhere (a raw KV watch of the NATS mirror), a write of exactly that version costs no GET."""

    def remember(self, obj: KubeObject) -> None: ...


class ObjectStore(Protocol):
    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        """The current object; raises NotFound."""
        ...

    async def create(self, obj: ObjT) -> ObjT:
        """Create-if-absent. Fills uid, creationTimestamp and resourceVersion; raises AlreadyExists."""
        ...

    async def update(self, obj: ObjT) -> ObjT:
        """Replace the object if it is still at `metadata.resourceVersion`; raises Conflict or NotFound."""
        ...

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        """Set `spec.nodeName` of the pod named like `pod`, and merge `annotations` into it, in one write.

        Fenced on what a binding needs, not on the caller's resourceVersion (a label written since the
        caller's copy does not fail it): PreconditionFailed when the pod of that name has another uid
        (deleted and created again), Conflict when it is bound already (to any node) or being deleted,
        NotFound when it is gone. InvalidObject when `pod` carries no uid. The bound pod arrives
        through the watch; nothing is returned (an apiserver's binding answers with a status only).
        """
        ...

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
        """Delete (CAS on resource_version and uid when given); raises NotFound or Conflict.

        A pod bound to a node is deleted gracefully like Kubernetes does: it gets a deletionTimestamp
        and its node finishes it; `grace=False` removes it at once.
        """
        ...

    async def list(self, kind: type[ObjT], namespace: str | None = None) -> tuple[list[ObjT], int]:
        """Every object of a kind (optionally one namespace) and the revision the list is consistent at."""
        ...

    def watch(
        self,
        kind: type[ObjT],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Changes after `from_revision`; with 0, first the current state, then SYNCED, then changes.

        The iterator survives reconnects and server restarts: it resumes after the last revision it
        yielded, so nothing is missed (an object changed twice may be seen once, at its newest state).

        With `select` (vc_proto.selectors), a change whose stored JSON it refuses is yielded as a DELETE
        of that key, undecoded: the object left (or never entered) the reader's selection.
        """
        ...


async def collect_list(events: AsyncIterator[WatchEvent], kind: type[ObjT]) -> tuple[list[ObjT], int]:
    """A list from a watch started at revision 0: every object up to SYNCED, and that revision.

    Adapters whose list is a replay of their change feed (the NATS KV store, the NATS mirror of the
    kube backend) share this, so list and watch can never disagree.
    """
    items: dict[tuple[str | None, str], ObjT] = {}
    async for event in events:
        if event.op is WatchOp.SYNCED:
            return list(items.values()), event.revision
        if event.op is WatchOp.PUT and isinstance(event.obj, kind):
            items[(event.namespace, event.name)] = event.obj
        else:
            items.pop((event.namespace, event.name), None)
    raise RuntimeError("the change feed ended before it synced")


def refuse_unlistable_namespace(namespace: str | None) -> None:
    """Every store's list and watch: a namespace no key can be in (" ", "a.b", "*") is refused at once.
    On NATS a watch on such a key filter is never answered (`vcctl job list -n " "` waited forever)."""
    if namespace is not None and not subjects.is_token(namespace):
        raise InvalidObject("namespace", "subject-token", f"{namespace!r} cannot name a namespace")

"""What a tenant's vcctl reads, and how it says what the server refused.

A tenant's NATS identity reads only its own namespaces (vc_security.identities): the server refuses a
get anywhere else, and admission a watch or list (the consumers it makes for tenants, vc_bus.brokered,
whose refusal is reported as the server's would be), and `--all-namespaces` with it. Its credentials file names those
namespaces, so vcctl reads "all namespaces" as all of *its* namespaces, one after the other
(`ScopedStore`), and turns the server's terse "permissions violation for publish to <subject>" into
what the user asked for and could not have (`describe_refusal`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Final

from vc_cli.errors import CliError
from vc_core.store import ObjectStore, ObjT, WatchEvent
from vc_proto import subjects
from vc_proto.core import Pod
from vc_proto.kinds import KINDS
from vc_proto.selectors import Selector

# nats-py hands over the server's error in lower case, the subject in it too.
_KIND_OF_STREAM: Final = {f"kv_{subjects.bucket(kind)}": kind for kind in KINDS}
_HISTORY: Final = subjects.EVENTS_STREAM.lower()


class ScopedStore:
    """`inner` as a reader held to `namespaces` sees it: a namespaced list or watch across all namespaces
    covers those namespaces only (the server would refuse the others)."""

    def __init__(self, inner: ObjectStore, namespaces: frozenset[str]) -> None:
        self._inner = inner
        self._namespaces = sorted(namespaces)

    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        return await self._inner.get(kind, namespace, name)

    async def create(self, obj: ObjT) -> ObjT:
        return await self._inner.create(obj)

    async def update(self, obj: ObjT) -> ObjT:
        return await self._inner.update(obj)

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        await self._inner.bind(pod, node, annotations=annotations)

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
        await self._inner.delete(kind, namespace, name, resource_version=resource_version, uid=uid, grace=grace)

    async def list(self, kind: type[ObjT], namespace: str | None = None) -> tuple[list[ObjT], int]:
        if namespace is not None or not KINDS[kind.__name__].namespaced:
            return await self._inner.list(kind, namespace)
        found: list[ObjT] = []
        revision = 0
        for each in self._namespaces:
            items, at = await self._inner.list(kind, each)
            found.extend(items)
            revision = max(revision, at)
        return found, revision

    def watch(
        self,
        kind: type[ObjT],
        *,
        namespace: str | None = None,
        from_revision: int = 0,
        select: Selector | None = None,
    ) -> AsyncIterator[WatchEvent]:
        if namespace is None and KINDS[kind.__name__].namespaced:
            if len(self._namespaces) > 1:
                raise CliError(
                    f"a watch reads one namespace at a time: give -n (one of {', '.join(self._namespaces)})", code=2
                )
            namespace = self._namespaces[0]
        return self._inner.watch(kind, namespace=namespace, from_revision=from_revision, select=select)


def describe_refusal(error: str, identity: str, namespaces: frozenset[str] | None) -> str:
    """The server's permissions violation (as nats-py reports it: `nats: permissions violation for
    publish to "<subject>"`, lower-cased) as what was asked: which kind, in which namespace."""
    subject = error.split('"')[1] if error.count('"') >= 2 else error
    tokens = subject.lower().split(".")
    what = f"publish to {subject}"
    if tokens[:4] == ["$js", "api", "consumer", "create"] and len(tokens) >= 9:
        stream, scope = tokens[4], tokens[8]
        if stream == _HISTORY:  # vc.evt.<resource>.<namespace>..., or vc.evt.> (every namespace)
            what = f"read the history {_where(tokens[9] if len(tokens) >= 10 else '>')}"
        elif stream in _KIND_OF_STREAM:
            what = f"list {_KIND_OF_STREAM[stream]}s {_where(scope)}"
    elif tokens[:4] == ["$js", "api", "direct", "get"] and len(tokens) >= 9 and tokens[4] in _KIND_OF_STREAM:
        what = f"read {_KIND_OF_STREAM[tokens[4]]} {tokens[7]}/{'.'.join(tokens[8:])}"
    elif subject.startswith(subjects.ADMISSION_WRITE + "."):
        what = f"write as {subject.rsplit('.', 1)[-1]!r}"
    message = f"NATS refused identity {identity!r}: it may not {what}"
    if namespaces is not None:
        message += f" (it reads namespaces {', '.join(sorted(namespaces))} only: give -n)"
    return message


def _where(namespace: str) -> str:
    return "across all namespaces" if namespace in ("*", ">") else f"in namespace {namespace!r}"

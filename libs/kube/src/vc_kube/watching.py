"""List-then-watch one kind, forever, with nothing missed.

The known failure modes this loop is written against (platform-facts, kopf `continuous_watch`,
Volcano's informers, kubernetes-asyncio issues):
- a watch ends normally after `timeoutSeconds` (or the server's own limit): re-watch from the last
  resourceVersion seen, never from "now";
- `410 Gone` (as an HTTP status or an in-stream ERROR event) means that resourceVersion is compacted or
  older than a restarted apiserver's watch cache: re-list, and turn the difference between the new
  list and what was already delivered into PUT and DELETE changes, so deletions during the gap are
  not lost;
- BOOKMARK events only advance the resourceVersion (so a quiet kind does not fall out of the window);
- connection errors (apiserver restart, network): back off and retry from the last resourceVersion,
  forever; every retry is logged, so the loop never stops silently;
- any other ERROR event raises: the caller (the relay supervisor) restarts with a fresh list.

Each watch line is decoded once, by msgspec, straight into the kind's typed object (`Change.obj`); the
object part of a line is not parsed twice (the envelope keeps it as raw bytes until its type is known).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cache

import msgspec
import structlog

from vc_bus.decoding import UNDECODABLE, report_undecodable
from vc_core.errors import TemporaryError
from vc_core.retry import RetryPolicy
from vc_core.store import WatchOp
from vc_kube.client import Json, KubeApiError, KubeClient, map_error, resource_path
from vc_proto.kinds import Kind, KubeObject

log = structlog.get_logger(__name__)

WATCH_TIMEOUT_S = 290  # below common proxies' 5-minute idle cut-off
MAX_BACKOFF_S = 5.0
# A watch retries for as long as its reader runs: apiserver restarts, network errors, 429 and 5xx.
WATCH_RETRY = RetryPolicy((TemporaryError, KubeApiError), base_s=0.1, cap_s=MAX_BACKOFF_S)
# One list: a transient failure, or a continue token that expired (compaction), starts it over; 5 tries.
LIST_RETRY = RetryPolicy((TemporaryError,), base_s=0.2, cap_s=3.2, attempts=5)


@dataclass(frozen=True, slots=True)
class Change:
    op: WatchOp
    revision: int
    namespace: str | None = None
    name: str = ""
    # The object as it now is (PUT). None on a PUT: the apiserver has an object under this key that is
    # not a valid `Kind` here (reported and counted); keep what you had, do not treat it as deleted.
    obj: KubeObject | None = None


class _Line(msgspec.Struct):
    """A watch event's envelope; its object stays undecoded until the event's type says what it is."""

    type: str
    object: msgspec.Raw = msgspec.Raw(b"{}")


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str | None = None
    resource_version: str | None = None


class _Head(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_line = msgspec.json.Decoder(_Line)
_head = msgspec.json.Decoder(_Head)
_any = msgspec.json.Decoder()


@cache
def _decoder(kind: Kind) -> msgspec.json.Decoder[KubeObject]:
    return msgspec.json.Decoder(kind.type, strict=False)


def decode_object(kind: Kind, data: bytes | msgspec.Raw) -> KubeObject:
    """A full object of `kind` as the apiserver sends it (with kind and apiVersion), typed; managedFields
    (bookkeeping of server-side apply, large and never used here) dropped."""
    obj = _decoder(kind).decode(data)
    if obj.metadata.managed_fields is not None:
        obj = msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, managed_fields=None))
    return obj


def from_list_item(kind: Kind, raw: Json) -> KubeObject:
    """A list's item (which lacks kind and apiVersion) as its typed object."""
    raw = {**raw, "kind": kind.kind, "apiVersion": kind.api_version}
    meta = raw.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        raw["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    obj: KubeObject = msgspec.convert(raw, kind.type, strict=False)
    return obj


def _put(obj: KubeObject) -> Change:
    meta = obj.metadata
    return Change(WatchOp.PUT, int(meta.resource_version or 0), meta.namespace, meta.name or "", obj)


def _unfit(kind: Kind, namespace: str | None, name: str, revision: int, error: BaseException) -> Change:
    where = f"{namespace}/{name}" if namespace else name
    report_undecodable(source="apiserver", kind=kind.kind, error=error, key=where, revision=revision)
    return Change(WatchOp.PUT, revision, namespace, name, None)


class Gone(Exception):
    """The resourceVersion is too old: re-list."""


def _key(raw: Json) -> tuple[str | None, str]:
    meta = raw.get("metadata") or {}
    return meta.get("namespace"), str(meta.get("name", ""))


def _rv(raw: Json) -> int:
    return int((raw.get("metadata") or {}).get("resourceVersion") or 0)


async def watch_kind(
    kube: KubeClient,
    row: Kind,
    *,
    namespace: str | None = None,
    from_revision: int = 0,
    label_selector: str | None = None,
) -> AsyncIterator[Change]:
    """PUT/DELETE changes of one kind (only objects matching `label_selector`, when given); from 0: the
    current state, SYNCED, then changes."""
    row = await kube.served(row)
    known: dict[tuple[str | None, str], int] = {}
    revision = from_revision
    if revision == 0:
        items, revision = await list_raw(kube, row, namespace, label_selector=label_selector)
        for raw in items:
            known[_key(raw)] = _rv(raw)
            yield _listed(row, raw)
        yield Change(WatchOp.SYNCED, revision)
    failures = 0
    while True:
        try:
            async for change in _watch_once(kube, row, namespace, revision, label_selector):
                failures = 0
                revision = max(revision, change.revision)
                if change.op is WatchOp.SYNCED:  # a bookmark: only the revision moves
                    continue
                key = (change.namespace, change.name)
                if change.op is WatchOp.PUT:
                    known[key] = change.revision
                else:
                    known.pop(key, None)
                yield change
            # The server closed the watch (timeoutSeconds): go again from `revision`.
        except Gone:
            log.info("watch.relist", kind=row.kind, revision=revision)
            items, list_revision = await list_raw(kube, row, namespace, label_selector=label_selector)
            seen: dict[tuple[str | None, str], int] = {}
            for raw in items:
                key, rv = _key(raw), _rv(raw)
                seen[key] = rv
                if known.get(key) != rv:
                    yield _listed(row, raw)
            for key in known.keys() - seen.keys():
                yield Change(WatchOp.DELETE, list_revision, *key)
            known = seen
            revision = list_revision
        except TemporaryError as exc:
            failures += 1
            delay = WATCH_RETRY.delay_s(failures)
            log.warning("watch.retry", kind=row.kind, revision=revision, error=str(exc), delay_s=delay)
            await asyncio.sleep(delay)
        except KubeApiError as exc:
            if exc.status == 429 or exc.status >= 500:
                failures += 1
                delay = WATCH_RETRY.delay_s(failures)
                log.warning("watch.retry", kind=row.kind, status=exc.status, delay_s=delay)
                await asyncio.sleep(delay)
                continue
            raise


async def _watch_once(
    kube: KubeClient, row: Kind, namespace: str | None, revision: int, label_selector: str | None
) -> AsyncIterator[Change]:
    query = {
        "watch": "1",
        "resourceVersion": str(revision),
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(WATCH_TIMEOUT_S),
        **_selecting(label_selector),
    }
    try:
        stream = kube.stream(resource_path(row, namespace), query=query, read_timeout_s=WATCH_TIMEOUT_S + 30)
        async for line in stream:
            try:
                event = _line.decode(line)
                if event.type in ("ADDED", "MODIFIED"):
                    yield _watched(row, event.object)
                elif event.type in ("DELETED", "BOOKMARK"):
                    meta = _head.decode(event.object).metadata
                    rv = int(meta.resource_version or 0)
                    if event.type == "DELETED":
                        yield Change(WatchOp.DELETE, rv, meta.namespace, meta.name)
                    else:
                        yield Change(WatchOp.SYNCED, rv)
                elif event.type == "ERROR":
                    raise _watch_error(_any.decode(event.object))
                else:
                    log.warning("watch.unknown_event", kind=row.kind, type=event.type)
            except UNDECODABLE as exc:
                # Not a watch event at all: what the stream says can no longer be trusted to be
                # complete, so it starts again from the last good revision.
                raise TemporaryError(f"undecodable watch event of {row.plural}: {exc}") from exc
    except KubeApiError as exc:
        if exc.status == 410:
            raise Gone from exc
        raise


def _listed(row: Kind, raw: Json) -> Change:
    try:
        return _put(from_list_item(row, raw))
    except UNDECODABLE as exc:
        return _unfit(row, *_key(raw), _rv(raw), exc)


def _watched(row: Kind, data: msgspec.Raw) -> Change:
    try:
        return _put(decode_object(row, data))
    except UNDECODABLE as exc:
        meta = _head.decode(data).metadata  # the envelope decoded, so this is JSON: its key, or raise
        return _unfit(row, meta.namespace, meta.name, int(meta.resource_version or 0), exc)


def _watch_error(status: object) -> Exception:
    raw: Json = status if isinstance(status, dict) else {}
    code = int(raw.get("code") or 0)
    if code == 410:
        return Gone()
    if code >= 500 or code == 429:
        return TemporaryError(f"watch ERROR {code}: {raw.get('message', '')}")
    return KubeApiError(code, raw)


def _selecting(label_selector: str | None) -> dict[str, str]:
    return {"labelSelector": label_selector} if label_selector else {}


async def list_raw(
    kube: KubeClient, row: Kind, namespace: str | None, *, page: int = 500, label_selector: str | None = None
) -> tuple[list[Json], int]:
    """A paginated, consistent list (every page at the first page's resourceVersion)."""
    row = await kube.served(row)

    async def once() -> tuple[list[Json], int]:
        items: list[Json] = []
        query: dict[str, str] = {"limit": str(page), **_selecting(label_selector)}
        revision = 0
        while True:
            try:
                body = await kube.request("GET", resource_path(row, namespace), query=query)
            except KubeApiError as exc:
                if exc.status != 410:
                    raise map_error(exc, row.kind, row.plural) from exc
                raise TemporaryError(f"the list's continue token expired: {exc}") from exc
            items.extend(body.get("items") or [])
            meta = body.get("metadata") or {}
            revision = revision or int(meta.get("resourceVersion") or 0)
            token = meta.get("continue")
            if not token:
                return items, revision
            query = {"limit": str(page), "continue": token, **_selecting(label_selector)}

    try:
        return await LIST_RETRY.call(once, sleep=asyncio.sleep)
    except TemporaryError as exc:
        raise TemporaryError(f"listing {row.plural} failed: {exc}") from exc

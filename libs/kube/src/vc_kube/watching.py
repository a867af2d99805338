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
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog

from vc_core.errors import TemporaryError
from vc_core.store import WatchOp
from vc_kube.client import Json, KubeApiError, KubeClient, map_error, resource_path
from vc_proto.kinds import Kind

log = structlog.get_logger(__name__)

WATCH_TIMEOUT_S = 290  # below common proxies' 5-minute idle cut-off
MAX_BACKOFF_S = 5.0


@dataclass(frozen=True, slots=True)
class Change:
    op: WatchOp
    revision: int
    namespace: str | None = None
    name: str = ""
    raw: Json | None = None


class Gone(Exception):
    """The resourceVersion is too old: re-list."""


def _key(raw: Json) -> tuple[str | None, str]:
    meta = raw.get("metadata") or {}
    return meta.get("namespace"), str(meta.get("name", ""))


def _rv(raw: Json) -> int:
    return int((raw.get("metadata") or {}).get("resourceVersion") or 0)


async def watch_kind(
    kube: KubeClient, row: Kind, *, namespace: str | None = None, from_revision: int = 0
) -> AsyncIterator[Change]:
    """PUT/DELETE changes of one kind; from 0: the current state, SYNCED, then changes."""
    known: dict[tuple[str | None, str], int] = {}
    revision = from_revision
    if revision == 0:
        items, revision = await list_raw(kube, row, namespace)
        for raw in items:
            known[_key(raw)] = _rv(raw)
            yield Change(WatchOp.PUT, _rv(raw), *_key(raw), raw)
        yield Change(WatchOp.SYNCED, revision)
    failures = 0
    while True:
        try:
            async for change in _watch_once(kube, row, namespace, revision):
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
            items, list_revision = await list_raw(kube, row, namespace)
            seen: dict[tuple[str | None, str], int] = {}
            for raw in items:
                key, rv = _key(raw), _rv(raw)
                seen[key] = rv
                if known.get(key) != rv:
                    yield Change(WatchOp.PUT, rv, *key, raw)
            for key in known.keys() - seen.keys():
                yield Change(WatchOp.DELETE, list_revision, *key)
            known = seen
            revision = list_revision
        except TemporaryError as exc:
            failures += 1
            delay = min(MAX_BACKOFF_S, 0.1 * 2**failures)
            log.warning("watch.retry", kind=row.kind, revision=revision, error=str(exc), delay_s=delay)
            await asyncio.sleep(delay)
        except KubeApiError as exc:
            if exc.status == 429 or exc.status >= 500:
                failures += 1
                delay = min(MAX_BACKOFF_S, 0.1 * 2**failures)
                log.warning("watch.retry", kind=row.kind, status=exc.status, delay_s=delay)
                await asyncio.sleep(delay)
                continue
            raise


async def _watch_once(kube: KubeClient, row: Kind, namespace: str | None, revision: int) -> AsyncIterator[Change]:
    query = {
        "watch": "1",
        "resourceVersion": str(revision),
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(WATCH_TIMEOUT_S),
    }
    try:
        stream = kube.stream(resource_path(row, namespace), query=query, read_timeout_s=WATCH_TIMEOUT_S + 30)
        async for event in stream:
            kind = event.get("type")
            raw = event.get("object") or {}
            if kind in ("ADDED", "MODIFIED"):
                yield Change(WatchOp.PUT, _rv(raw), *_key(raw), raw)
            elif kind == "DELETED":
                yield Change(WatchOp.DELETE, _rv(raw), *_key(raw))
            elif kind == "BOOKMARK":
                yield Change(WatchOp.SYNCED, _rv(raw))
            elif kind == "ERROR":
                code = int(raw.get("code") or 0)
                if code == 410:
                    raise Gone
                if code >= 500 or code == 429:
                    raise TemporaryError(f"watch ERROR {code}: {raw.get('message', '')}")
                raise KubeApiError(code, raw)
            else:
                log.warning("watch.unknown_event", kind=row.kind, type=kind)
    except KubeApiError as exc:
        if exc.status == 410:
            raise Gone from exc
        raise


async def list_raw(kube: KubeClient, row: Kind, namespace: str | None, *, page: int = 500) -> tuple[list[Json], int]:
    """A paginated, consistent list (every page at the first page's resourceVersion)."""
    last: Exception | None = None
    for attempt in range(5):
        items: list[Json] = []
        query: dict[str, str] = {"limit": str(page)}
        revision = 0
        try:
            while True:
                body = await kube.request("GET", resource_path(row, namespace), query=query)
                items.extend(body.get("items") or [])
                meta = body.get("metadata") or {}
                revision = revision or int(meta.get("resourceVersion") or 0)
                token = meta.get("continue")
                if not token:
                    return items, revision
                query = {"limit": str(page), "continue": token}
        except KubeApiError as exc:
            if exc.status != 410:
                raise map_error(exc, row.kind, row.plural) from exc
            last = exc  # the continue token expired (compaction): start the list over
        except TemporaryError as exc:
            last = exc
            await asyncio.sleep(0.2 * 2**attempt)
    raise TemporaryError(f"listing {row.plural} failed: {last}")

"""Tephra for programs: `async with open_client() as tephra:` then `tephra.events(...)`, `tephra.jobs(...)`,
`tephra.watch(...)`.

It finds its identity as vcctl does (`creds`, else `VC_NATS__CREDS`, else the admin of the `vcctl up`
data directory found: vc_cli.client.resolve_credentials), and its connection reconnects for ever, so a
read goes on across disconnects and nats-server restarts with nothing lost or repeated. The server
decides what the identity may read: a read it refuses ends at once with ReadRefused.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable

from nats.aio.client import Client

from vc_bus.brokered import use_admission_consumers
from vc_bus.connection import connect
from vc_bus.store import NatsStore
from vc_cli.client import Endpoint, resolve_credentials
from vc_cli.sdk.cursor import Cursor, parse_cursor
from vc_cli.sdk.reading import Event, read_events
from vc_cli.sdk.refusals import Refusals, read_of
from vc_cli.sdk.selection import select_events
from vc_cli.selectors import EVERYTHING, Selector, parse_selector
from vc_cli.tenancy import ScopedStore
from vc_core.errors import InvalidObject, NotFound
from vc_core.store import ObjectStore, WatchEvent, WatchOp
from vc_proto import subjects
from vc_proto.batch import Job
from vc_proto.kinds import KubeObject
from vc_security.credentials import ClientCredentials

DEFAULT_SERVER = "nats://127.0.0.1:4222"


class TephraClient:
    def __init__(
        self,
        nc: Client,
        store: ObjectStore,
        *,
        refusals: Refusals,
        identity: str | None = None,
        namespaces: frozenset[str] | None = None,
    ) -> None:
        self._nc = nc
        self._store = store
        self._refusals = refusals
        self.identity = identity
        # The namespaces a tenant's credentials name (the server decides; a hint); None: every one.
        self.namespaces = namespaces

    def events(
        self,
        *,
        namespace: str | None = None,
        job: str | None = None,
        queue: str | None = None,
        kinds: Iterable[str] | None = None,
        since: Cursor | str | int | None = None,
        live: bool = True,
    ) -> AsyncIterator[Event]:
        """The history's events after `since` (from the oldest kept without it) that the filters select,
        in stream order, each once; with `live` (the default) it then waits for new ones for ever.

        InvalidObject for a bad argument; ReadRefused when the server refuses the read (a tenant must
        name one of its namespaces); CursorExpired when events after `since` are no longer kept.
        """
        selection = select_events(namespace=namespace, job=job, queue=queue, kinds=kinds)
        cursor = since if isinstance(since, Cursor) or since is None else parse_cursor(since)
        events = read_events(self._nc, selection, since=cursor, live=live, queue_lookup=self._queue_of)
        return self._refusals.guard(events, read_of(subjects.EVENTS_STREAM, namespace))

    async def jobs(
        self, *, namespace: str | None = None, queue: str | None = None, selector: str | Selector = ""
    ) -> list[Job]:
        """The jobs of `namespace` (every one the identity reads, when None) in `queue`, whose labels match
        `selector` (kubectl's `-l` syntax), as `vcctl job list` selects them."""
        select = _selector(selector)
        listed = self._refusals.call(self._store.list(Job, namespace), read_of(_job_stream(), namespace))
        jobs, _ = await listed
        return [job for job in jobs if _job_matches(job, queue, select)]

    def watch(
        self, *, namespace: str | None = None, queue: str | None = None, selector: str | Selector = ""
    ) -> AsyncIterator[WatchEvent]:
        """The jobs as `jobs()` selects them, then each change (a PUT of the job as it now is, a DELETE
        when it is gone or no longer selected), across reconnects and restarts (vc_core.store.watch)."""
        select = _selector(selector)
        changes = _selected_changes(self._store.watch(Job, namespace=namespace), queue, select)
        return self._refusals.guard(changes, read_of(_job_stream(), namespace))

    async def _queue_of(self, namespace: str | None, job: str) -> str | None:
        try:
            found = await self._store.get(Job, namespace, job)
        except NotFound:
            return None
        return found.spec.queue if found.spec else None


def _job_stream() -> str:
    return f"KV_{subjects.bucket('Job')}"


def _selector(selector: str | Selector) -> Selector:
    if isinstance(selector, Selector):
        return selector
    if not selector:
        return EVERYTHING
    try:
        return parse_selector(selector)
    except ValueError as exc:
        raise InvalidObject("selector", "label-selector", str(exc)) from exc


def _job_matches(job: KubeObject, queue: str | None, select: Selector) -> bool:
    if not isinstance(job, Job) or not select.matches(job.metadata.labels):
        return False
    return queue is None or (job.spec is not None and job.spec.queue == queue)


async def _selected_changes(
    changes: AsyncIterator[WatchEvent], queue: str | None, select: Selector
) -> AsyncIterator[WatchEvent]:
    shown: set[tuple[str | None, str]] = set()
    async for change in changes:
        key = (change.namespace, change.name)
        if change.op is WatchOp.PUT and change.obj is not None and not _job_matches(change.obj, queue, select):
            if key not in shown:
                continue
            change = WatchEvent(WatchOp.DELETE, change.revision, change.namespace, change.name)
        if change.op is WatchOp.PUT:
            shown.add(key)
        elif change.op is WatchOp.DELETE:
            shown.discard(key)
        yield change


@contextlib.asynccontextmanager
async def open_client(
    server: str | None = None, *, creds: str | None = None, ca: str | None = None, name: str = "tephra-client"
) -> AsyncIterator[TephraClient]:
    """A client of the Tephra at `server` (default: VC_SERVER, else nats://127.0.0.1:4222), as the
    identity vcctl would be there. It waits for the server when it is not up yet."""
    server = server or os.environ.get("VC_SERVER", DEFAULT_SERVER)
    credentials = resolve_credentials(Endpoint(server, creds=creds, ca=ca))
    refusals = Refusals(credentials.identity if credentials else "(anonymous)", _namespaces(credentials))
    async with connect(server, name=name, credentials=credentials, observe_error=refusals.note) as nc:
        store: ObjectStore = NatsStore(nc, direct_gets=True)  # direct gets: the only get a tenant may make
        if credentials is not None and credentials.namespaces is not None:
            store = ScopedStore(store, credentials.namespaces)
            # A tenant may not create consumers: admission makes those its reads need (vc_bus.brokered).
            use_admission_consumers(nc, credentials.identity, on_forbidden=refusals.note)
        identity = credentials.identity if credentials else None
        yield TephraClient(nc, store, refusals=refusals, identity=identity, namespaces=_namespaces(credentials))


def _namespaces(credentials: ClientCredentials | None) -> frozenset[str] | None:
    return credentials.namespaces if credentials is not None else None

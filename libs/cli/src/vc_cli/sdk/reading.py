"""Reading the history as a program does: the events a selection names, after a cursor, resuming by
itself across disconnects and server restarts (vc_bus.events.follow does the resuming).

A cursor is kept only as long as the stream keeps its message (30 days or 4 GiB, vc_bus.events): a read
`since` a cursor older than the oldest message kept would silently skip what was dropped, so it raises
`CursorExpired` instead, naming the oldest cursor there is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from nats.aio.client import Client

from vc_bus.events import follow
from vc_cli.sdk.cursor import Cursor
from vc_cli.sdk.selection import EventSelection, JobQueues
from vc_core.errors import PermanentError
from vc_proto import subjects
from vc_proto.events import DomainEvent

# The queue of a job (namespace, name), read from the store; None when the job is gone.
QueueLookup = Callable[[str | None, str], Awaitable[str | None]]


@dataclass(frozen=True, slots=True)
class Event:
    """One fact of the history and where it is: hand `cursor` back as `since` to read what follows it."""

    cursor: Cursor
    event: DomainEvent


class CursorExpired(PermanentError):
    """The events after `since` are no longer all kept: the oldest message kept is `oldest`."""

    def __init__(self, since: Cursor, oldest: int) -> None:
        super().__init__(
            f"since: the history after cursor {since} is no longer kept (the oldest event kept is at {oldest}); "
            "read from the oldest with no cursor, or from a newer cursor"
        )
        self.since = since
        self.oldest = oldest


async def read_events(
    nc: Client,
    selection: EventSelection,
    *,
    since: Cursor | None = None,
    live: bool = True,
    queue_lookup: QueueLookup | None = None,
) -> AsyncIterator[Event]:
    """The selected events after `since` (from the oldest kept without it), in stream order; with
    `live` it then waits for new ones for ever, else it ends once it has caught up."""
    if since is not None:
        await check_kept(nc, since)
    queues = JobQueues()
    looked_up: set[tuple[str | None, str]] = set()
    start = since.sequence if since is not None else 1
    async for stored in follow(nc, selection.subject, from_sequence=start, stop_when_caught_up=not live):
        cursor = Cursor(stored.sequence, stored.index)
        if since is not None and cursor <= since:
            continue  # the rest of the cursor's own message is read again: its events up to the cursor
        event = stored.event
        queue = queues.queue_of(event)
        if selection.queue is not None and queue is None and event.job and queue_lookup is not None:
            key = (event.namespace, event.job)
            if key not in looked_up:
                looked_up.add(key)
                queues.remember(event.namespace, event.job, await queue_lookup(*key))
                queue = queues.queue_of(event)
        if selection.accepts(event, queue):
            yield Event(cursor, event)


async def check_kept(nc: Client, since: Cursor) -> None:
    """CursorExpired when messages after `since` have been dropped by the stream's limits."""
    info = await nc.jetstream().stream_info(subjects.EVENTS_STREAM)
    oldest = info.state.first_seq
    if oldest > since.sequence + 1:
        raise CursorExpired(since, oldest)

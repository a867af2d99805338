"""Tephra's client API for programs: the event history as typed, resumable events, and the jobs.

    async with open_client() as tephra:
        async for item in tephra.events(namespace="team-a", kinds=["Job"], since=saved_cursor):
            handle(item.event)
            saved_cursor = item.cursor

The contract (event kinds and fields, ordering, resume, retention, who reads what) is docs/events.md.
"""

from vc_cli.sdk.client import TephraClient, open_client
from vc_cli.sdk.cursor import Cursor, parse_cursor
from vc_cli.sdk.reading import CursorExpired, Event
from vc_cli.sdk.refusals import ReadRefused
from vc_cli.sdk.selection import EVENT_KINDS

__all__ = [
    "EVENT_KINDS",
    "Cursor",
    "CursorExpired",
    "Event",
    "ReadRefused",
    "TephraClient",
    "open_client",
    "parse_cursor",
]

"""vcctl events: the history of a namespace, a job or a queue, kubectl-style (`kubectl events`), from the
same stream and with the same selection as the client API (vc_cli.sdk).

    vcctl events [-n NS | -A] [--job NAME] [--queue Q] [--kind Pod,Job] [--since CURSOR] [-w]
                 [-o wide|json|yaml|cloudevents] [--no-headers]

Every line carries its event's cursor: `--since CURSOR` prints what came after it, so a script resumes
where it stopped. `-o json` and `-o cloudevents` print one JSON object per line (the event with its
`cursor`; a CloudEvent with its `tephracursor`), `-o yaml` one document per event.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator
from typing import Any, Final

import msgspec
import yaml

from vc_cli.client import Tephra
from vc_cli.errors import CliError
from vc_cli.flags import namespace_type, object_name_type
from vc_cli.output import format_row
from vc_cli.sdk.client import TephraClient, open_client
from vc_cli.sdk.cloudevents import to_cloudevent
from vc_cli.sdk.cursor import Cursor, parse_cursor
from vc_cli.sdk.reading import Event
from vc_cli.sdk.selection import EVENT_KINDS, select_events
from vc_core.errors import InvalidObject

FORMATS: Final = ("table", "wide", "json", "yaml", "cloudevents")
HEADERS: Final = ("CURSOR", "TIME", "OBJECT", "REASON", "MESSAGE")
WIDE_HEADERS: Final = (
    "CURSOR",
    "TIME",
    "OBJECT",
    "REASON",
    "PHASE",
    "JOB",
    "QUEUE",
    "NODE",
    "EXIT",
    "SOURCE",
    "MESSAGE",
)
# Streamed rows cannot be measured first: columns get these widths (a longer value pushes the line).
WIDTHS: Final = {"CURSOR": 8, "TIME": 20, "NAMESPACE": 12, "OBJECT": 36, "REASON": 14, "PHASE": 20, "JOB": 20}


def add_parser(sub: argparse._SubParsersAction) -> None:
    events = sub.add_parser("events", help="the history: job, task, pod, scheduler and queue events")
    events.add_argument(
        "-n", "--namespace", type=namespace_type, default="default", help="the namespace (default: default)"
    )
    events.add_argument("--all-namespaces", "-A", action="store_true", help="every namespace you may read")
    events.add_argument("--job", type=object_name_type, help="only this job's events (its tasks, pods, PodGroup)")
    events.add_argument("--queue", type=object_name_type, help="only the queue's events and those of its jobs")
    events.add_argument("--kind", type=_kinds_type, help=f"only these kinds, e.g. Pod,Job ({', '.join(EVENT_KINDS)})")
    events.add_argument("--since", type=_cursor_type, metavar="CURSOR", help="only the events after this cursor")
    events.add_argument("-w", "--watch", action="store_true", help="after the history, print events as they happen")
    events.add_argument(
        "-o", "--output", choices=FORMATS[1:], help="wide, json, yaml or cloudevents (default: a table)"
    )
    events.add_argument("--no-headers", action="store_true", help="print the table without its header line")


def _kinds_type(text: str) -> frozenset[str]:
    try:
        kinds = select_events(kinds=text).kinds
    except InvalidObject as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    assert kinds is not None
    return kinds


def _cursor_type(text: str) -> Cursor:
    try:
        return parse_cursor(text)
    except InvalidObject as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


_kinds_type.__name__ = "kind list"
_cursor_type.__name__ = "cursor"


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    """Reads through the client API's own connection, which reconnects for ever: a watch goes on across
    disconnects and nats-server restarts (vcctl's connection, already open, says the server is there)."""
    printer = _Printer(args.output or "table", namespaces=args.all_namespaces, headers=not args.no_headers)
    async with open_client(args.server, creds=args.creds, ca=args.ca, name="vcctl-events") as client:
        async for item in _events(client, args):
            printer.print(item)
    return 0


async def _events(client: TephraClient, args: argparse.Namespace) -> AsyncIterator[Event]:
    """The selected events; across all namespaces a tenant reads its own one after the other (a
    watch, which cannot end, reads one: it asks for -n)."""
    scopes: list[str | None] = [args.namespace]
    if args.all_namespaces:
        scopes = [None] if client.namespaces is None else [*sorted(client.namespaces)]
    if args.watch and len(scopes) > 1:
        names = ", ".join(str(scope) for scope in scopes)
        raise CliError(f"a watch reads one namespace at a time: give -n (one of {names})", code=2)
    found: list[Event] = []
    for scope in scopes:
        reading = client.events(
            namespace=scope, job=args.job, queue=args.queue, kinds=args.kind, since=args.since, live=args.watch
        )
        if len(scopes) == 1:
            async for item in reading:
                yield item
            return
        found += [item async for item in reading]
    for item in sorted(found, key=lambda e: e.cursor):
        yield item


class _Printer:
    def __init__(self, output: str, *, namespaces: bool, headers: bool) -> None:
        self._output = output
        columns = list(WIDE_HEADERS if output == "wide" else HEADERS)
        if namespaces:
            columns.insert(2, "NAMESPACE")
        self._columns = columns
        self._widths = [WIDTHS.get(c, 6) if c != "MESSAGE" else 0 for c in columns]
        self._headers = headers and output in ("table", "wide")

    def print(self, item: Event) -> None:
        if self._headers:
            self._line(format_row(self._columns, self._widths))
            self._headers = False
        if self._output in ("table", "wide"):
            self._line(format_row([_cell(item, c) for c in self._columns], self._widths))
        elif self._output == "json":
            self._line(json.dumps(_with_cursor(item), separators=(",", ":")))
        elif self._output == "cloudevents":
            self._line(json.dumps(to_cloudevent(item.event, item.cursor), separators=(",", ":")))
        else:
            self._line("---\n" + yaml.safe_dump(_with_cursor(item), sort_keys=False).rstrip())

    @staticmethod
    def _line(text: str) -> None:
        print(text, flush=True)


def _with_cursor(item: Event) -> dict[str, Any]:
    return {"cursor": str(item.cursor), **msgspec.to_builtins(item.event)}


def _cell(item: Event, column: str) -> str:
    e = item.event
    cells = {
        "CURSOR": str(item.cursor),
        "TIME": e.occurred_at,
        "NAMESPACE": e.namespace or "",
        "OBJECT": f"{e.kind}/{e.name}",
        "REASON": e.reason,
        "PHASE": f"{e.previous_phase or ''}->{e.phase}" if e.phase else "",
        "JOB": e.job or "",
        "QUEUE": e.queue or "",
        "NODE": e.node or "",
        "EXIT": "" if e.exit_code is None else str(e.exit_code),
        "SOURCE": e.source,
        "MESSAGE": e.message or "",
    }
    return cells[column]

"""List commands: one object per row in the format `-o` asks for, and `-w/--watch` streaming changes.

`Listing` is the pure part: the columns of a kind (Volcano's, e.g. `vcctl job list`'s Name Creation
Phase ... RetryCount), the namespace column under `--all-namespaces`, `--no-headers`,
`--output-watch-events`, and how one object prints in every format. `watch` feeds it from the store's
watches (JetStream KV change streams, or the apiserver's watch): first the state the watch starts
from, as `list` prints it, then a line for every change, as kubectl's `get -w` does.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import yaml

from vc_cli.output import NOTHING_FOUND, OutputFormat, column_widths, format_row, print_objects, resource_name
from vc_cli.selectors import EVERYTHING, Selector
from vc_core.store import ObjectStore, WatchEvent, WatchOp
from vc_proto import codec
from vc_proto.kinds import KubeObject

O = TypeVar("O", bound=KubeObject)  # noqa: E741 (the store port names it so)
Key = tuple[str | None, str]


@dataclass(frozen=True)
class Columns(Generic[O]):
    """A kind's table: its headers and how an object fills them; `wide` adds columns for -o wide."""

    headers: Sequence[str]
    row: Callable[[O], Sequence[object]]
    wide_headers: Sequence[str] = ()
    wide_row: Callable[[O], Sequence[object]] | None = None


def key_of(obj: KubeObject) -> Key:
    return obj.metadata.namespace, obj.metadata.name or ""


def sort_objects(objs: Iterable[O]) -> list[O]:
    return sorted(objs, key=lambda o: (o.metadata.namespace or "", o.metadata.name or ""))


@dataclass
class Listing(Generic[O]):
    columns: Columns[O]
    output: OutputFormat
    no_headers: bool = False
    all_namespaces: bool = False
    watch_events: bool = False  # --output-watch-events: an EVENT column (ADDED, MODIFIED, DELETED)
    _widths: list[int] | None = field(default=None, init=False)

    # -- rows ---------------------------------------------------------------------------------------
    def headers(self) -> list[str]:
        headers = list(self.columns.headers)
        if self.output.kind == "wide":
            headers += self.columns.wide_headers
        if self.all_namespaces:
            headers = ["Namespace", *headers]
        if self.watch_events:
            headers = ["Event", *headers]
        return headers

    def row(self, obj: O, event: str = "ADDED") -> list[object]:
        row = list(self.columns.row(obj))
        if self.output.kind == "wide" and self.columns.wide_row is not None:
            row += self.columns.wide_row(obj)
        if self.all_namespaces:
            row = [obj.metadata.namespace or "", *row]
        if self.watch_events:
            row = [event, *row]
        return row

    # -- whole lists ------------------------------------------------------------------------------------
    def lines(self, objs: Sequence[O]) -> list[str]:
        """What `list` prints for `objs` (already filtered and sorted), line by line."""
        if not self.output.is_table:
            raise ValueError("lines() is for tables; print_list() prints the other formats")
        if not objs:
            return [NOTHING_FOUND]
        rows = [self.row(o) for o in objs]
        headers = self.headers()
        self._widths = column_widths(headers, rows)
        out = [] if self.no_headers else [format_row(headers, self._widths)]
        return out + [format_row(r, self._widths) for r in rows]

    def print_list(self, objs: Sequence[O]) -> None:
        if self.output.is_table:
            for line in self.lines(objs):
                print(line)
        else:
            print_objects(objs, self.output, single=False)
        sys.stdout.flush()

    # -- watch ----------------------------------------------------------------------------------------
    def change_lines(self, obj: O, event: str) -> list[str]:
        """The line(s) one watch event prints: a row (the header first when none was printed yet), the
        object as JSON (one line) or YAML (a `---` document), its name, or the template's output."""
        kind = self.output.kind
        if kind == "name":
            return [resource_name(obj)]
        if kind == "json":
            return [json.dumps(_watched(obj, event, self.watch_events), separators=(",", ":"))]
        if kind == "yaml":
            return ["---", yaml.safe_dump(_watched(obj, event, self.watch_events), sort_keys=False).rstrip("\n")]
        if kind == "jsonpath":
            assert self.output.template is not None
            return [self.output.template.render(codec.to_dict(obj))]
        row = self.row(obj, event)
        out = []
        if self._widths is None:
            headers = self.headers()
            self._widths = column_widths(headers, [row])
            if not self.no_headers:
                out.append(format_row(headers, self._widths))
        return [*out, format_row(row, self._widths)]

    def first_lines(self, objs: Sequence[O]) -> list[str]:
        """What a watch prints for the state it starts from: the list, but nothing when it is empty
        (the header comes with the first row), so a script reading the stream sees only objects."""
        if not objs:
            return []
        if self.output.is_table:
            return self.lines(objs)
        return [line for o in objs for line in self.change_lines(o, "ADDED")]


def _watched(obj: KubeObject, event: str, with_event: bool) -> dict[str, Any]:
    data = codec.to_dict(obj)
    return {"type": event, "object": data} if with_event else data


@dataclass
class Related:
    """Another kind a list's rows depend on (a queue's row counts its PodGroups): `on_event` keeps its
    own state from that kind's events and returns the keys of the rows that may have changed."""

    kind: type[KubeObject]
    on_event: Callable[[WatchEvent], Iterable[Key]]
    namespace: str | None = None


async def watch(
    store: ObjectStore,
    kind: type[O],
    listing: Listing[O],
    *,
    namespace: str | None = None,
    selector: Selector = EVERYTHING,
    keep: Callable[[O], bool] = lambda _: True,
    related: Sequence[Related] = (),
    emit: Callable[[str], None] | None = None,
) -> None:
    """Print the list as it is, then one line per change, until cancelled (Ctrl-C)."""
    write = emit or _print
    shown: dict[Key, O] = {}  # what was last printed for each object still matching
    last_line: dict[Key, list[str]] = {}
    known: dict[Key, O] = {}

    def matches(obj: O) -> bool:
        return selector.matches(obj.metadata.labels) and keep(obj)

    def show(key: Key, event: str) -> None:
        obj = known.get(key) if event != "DELETED" else shown.get(key)
        if obj is None:
            return
        lines = listing.change_lines(obj, event)
        if event != "DELETED" and last_line.get(key) == lines[-1:]:
            return  # a change to fields no column shows: nothing new to say
        for line in lines:
            write(line)
        if event == "DELETED":
            shown.pop(key, None)
            last_line.pop(key, None)
        else:
            shown[key] = obj
            last_line[key] = lines[-1:]

    streams: list[AsyncIterator[WatchEvent]] = [store.watch(kind, namespace=namespace)]
    streams += [store.watch(r.kind, namespace=r.namespace) for r in related]
    unsynced = set(range(len(streams)))
    async for source, event in _merge(streams):
        if event.op is WatchOp.SYNCED:
            unsynced.discard(source)
            if not unsynced:
                first = sort_objects(o for o in known.values() if matches(o))
                for line in listing.first_lines(first):
                    write(line)
                for obj in first:
                    shown[key_of(obj)] = obj
                    last_line[key_of(obj)] = listing.change_lines(obj, "ADDED")[-1:] if listing.output.is_table else []
            continue
        if source > 0:
            touched = list(related[source - 1].on_event(event))
            if not unsynced:
                for key in touched:
                    if key in shown:
                        show(key, "MODIFIED")
            continue
        key = (event.namespace, event.name)
        if event.op is WatchOp.DELETE:
            known.pop(key, None)
            if not unsynced and key in shown:
                show(key, "DELETED")
            continue
        assert event.obj is not None
        changed = event.obj
        if not isinstance(changed, kind):
            continue
        known[key] = changed
        if unsynced:
            continue
        if matches(changed):
            show(key, "MODIFIED" if key in shown else "ADDED")
        elif key in shown:  # it no longer matches the selector: gone from this view, as kubectl says
            show(key, "DELETED")


def _print(line: str) -> None:
    print(line, flush=True)


async def _merge(streams: Sequence[AsyncIterator[WatchEvent]]) -> AsyncIterator[tuple[int, WatchEvent]]:
    """The events of several watches as they come, each with the index of its stream."""
    queue: asyncio.Queue[tuple[int, WatchEvent | BaseException]] = asyncio.Queue(maxsize=4096)

    async def pump(index: int, stream: AsyncIterator[WatchEvent]) -> None:
        try:
            async for event in stream:
                await queue.put((index, event))
        except Exception as exc:  # handed to the reader, which raises it where the user sees it
            await queue.put((index, exc))

    tasks = [asyncio.create_task(pump(i, s)) for i, s in enumerate(streams)]
    try:
        while True:
            index, item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            yield index, item
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

"""Printing: kubectl-style plain tables (greppable), or the objects as Kubernetes JSON/YAML, names or
a JSONPath template (`-o json|yaml|wide|name|jsonpath=TEMPLATE`, `--no-headers`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import yaml

from vc_cli.jsonpath import JsonPathError, Template, parse_template
from vc_proto import codec
from vc_proto.kinds import KubeObject, kind_of

NOTHING_FOUND: Final = "No resources found"
COLUMN_GAP: Final = "   "


@dataclass(frozen=True, slots=True)
class OutputFormat:
    """What `-o` asked for: table (no -o), wide, json, yaml, name or jsonpath (with its template)."""

    kind: str = "table"
    template: Template | None = None

    @property
    def is_table(self) -> bool:
        return self.kind in ("table", "wide")


TABLE: Final = OutputFormat()
ALL_FORMATS: Final = ("wide", "json", "yaml", "name", "jsonpath")


def parse_output(text: str, allowed: Sequence[str] = ALL_FORMATS) -> OutputFormat:
    """`-o` as kubectl reads it: `json`, `yaml`, `wide`, `name`, `jsonpath=TEMPLATE` (or `jsonpath='...'`)."""
    name, sep, rest = text.partition("=")
    if name not in allowed:
        raise ValueError(f"{text!r} is not one of {', '.join(_spelled(allowed))}")
    if name == "jsonpath":
        if not sep:
            raise ValueError("jsonpath needs a template, e.g. -o jsonpath='{.metadata.name}'")
        template = rest
        if len(template) >= 2 and template[0] == template[-1] and template[0] in "'\"":
            template = template[1:-1]  # a quoted template that reached us with its quotes (e.g. from a script)
        try:
            return OutputFormat("jsonpath", parse_template(template))
        except JsonPathError as exc:
            raise ValueError(f"jsonpath: {exc}") from exc
    if sep:
        raise ValueError(f"{name} takes no value (got {text!r})")
    return OutputFormat(name)


def _spelled(allowed: Sequence[str]) -> list[str]:
    return [f"{a}=TEMPLATE" if a == "jsonpath" else a for a in allowed]


def output_type(*allowed: str) -> Callable[[str], OutputFormat]:
    """An argparse `type=` for -o accepting only `allowed`; a bad value is a usage error (exit 2)."""

    def convert(text: str) -> OutputFormat:
        try:
            return parse_output(text, allowed or ALL_FORMATS)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = "output format"  # what argparse names in its message
    return convert


def add_output_flags(parser: argparse.ArgumentParser, *allowed: str, headers: bool = True) -> None:
    """-o/--output restricted to `allowed` (default TABLE), and --no-headers for tables."""
    parser.add_argument(
        "-o",
        "--output",
        type=output_type(*allowed),
        default=TABLE,
        metavar="|".join(_spelled(allowed or ALL_FORMATS)),
        help=f"output format: {', '.join(_spelled(allowed or ALL_FORMATS))} (default: a table)",
    )
    if headers:
        parser.add_argument("--no-headers", action="store_true", help="print tables without their header line")


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, no_headers: bool = False) -> list[str]:
    """Columns left-aligned, three spaces apart, trailing blanks trimmed (so grep and awk work)."""
    cells = ([] if no_headers else [[str(c) for c in headers]]) + [[str(c) for c in row] for row in rows]
    if not cells:
        return []
    widths = column_widths(headers, rows)
    return [format_row(row, widths) for row in cells]


def column_widths(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[int]:
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    return [max(len(row[i]) for row in cells) for i in range(len(headers))]


def format_row(row: Sequence[object], widths: Sequence[int]) -> str:
    texts = [str(c) for c in row]
    padded = [t.ljust(widths[i]) if i < len(widths) else t for i, t in enumerate(texts)]
    return COLUMN_GAP.join(padded).rstrip()


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, no_headers: bool = False) -> None:
    if not rows:
        print(NOTHING_FOUND)  # Volcano's vcctl says so on stdout
        return
    for line in render_table(headers, rows, no_headers=no_headers):
        print(line)


def as_list(objs: Iterable[KubeObject]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [codec.to_dict(o) for o in objs]}


def print_objects(objs: Sequence[KubeObject], fmt: str | OutputFormat, *, single: bool) -> None:
    """The objects as `-o json|yaml|name|jsonpath` print them (one object alone when `single`)."""
    output = fmt if isinstance(fmt, OutputFormat) else OutputFormat(fmt)
    if output.kind == "name":
        for obj in objs:
            print(resource_name(obj))
        return
    data: Any = codec.to_dict(objs[0]) if single and len(objs) == 1 else as_list(objs)
    if output.kind == "jsonpath":
        assert output.template is not None
        sys.stdout.write(output.template.render(data))
        sys.stdout.flush()
        return
    if output.kind == "json":
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        yaml.safe_dump(data, sys.stdout, sort_keys=False)


def resource_name(obj: KubeObject) -> str:
    """`-o name` as kubectl prints it: `job.batch.volcano.sh/NAME`, `pod/NAME` (core kinds have no group)."""
    kind = kind_of(type(obj))
    group = f".{kind.group}" if kind.group else ""
    return f"{kind.kind.lower()}{group}/{obj.metadata.name}"


def age(timestamp: str | None, now: datetime | None = None) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "m" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def date(timestamp: str | None) -> str:
    return (timestamp or "")[:10]

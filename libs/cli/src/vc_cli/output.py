"""Printing: kubectl-style plain tables (greppable), or the objects as Kubernetes JSON/YAML."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from vc_proto import codec
from vc_proto.kinds import KubeObject


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    if not rows:
        print("No resources found")
        return
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("   ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def print_objects(objs: Sequence[KubeObject], fmt: str, *, single: bool) -> None:
    data: Any = [codec.to_dict(o) for o in objs]
    if single and len(data) == 1:
        data = data[0]
    else:
        data = {"apiVersion": "v1", "kind": "List", "items": data}
    if fmt == "json":
        json.dump(data, sys.stdout, indent=2)
        print()
    else:
        yaml.safe_dump(data, sys.stdout, sort_keys=False)


def age(timestamp: str | None, now: datetime | None = None) -> str:
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * (2 if unit != "m" else 1):
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def date(timestamp: str | None) -> str:
    return (timestamp or "")[:10]

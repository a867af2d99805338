"""Read user files: one or more YAML/JSON documents (or a `kind: List`), with errors naming the document.

Everything here is local input, bounded before it is parsed: a file is at most MAX_FILE_BYTES (the API's
own request limit: no object in a larger file could be sent anyway), documents nest at most MAX_NESTING
deep and expand to at most MAX_VALUES values (YAML aliases let a few lines stand for billions: a 20-line
"billion laughs" file would otherwise take gigabytes to encode), and every failure (missing,
unreadable, not UTF-8, not YAML, not objects) is one line and exit 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

import yaml

from vc_cli.errors import CliError
from vc_proto.api import MAX_REQUEST_BYTES

MAX_FILE_BYTES: Final = MAX_REQUEST_BYTES
# Kubernetes objects nest ~15 levels deep; PyYAML's composer recurses per level and would exhaust
# Python's stack at a few hundred.
MAX_NESTING: Final = 64
# Far above any real object (a 3 MiB request holds a few hundred thousand values at most).
MAX_VALUES: Final = 1_000_000


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents nested deeper than MAX_NESTING before it recurses into them."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"nested more than {MAX_NESTING} levels deep (line {mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_documents(path: str) -> list[dict[str, Any]]:
    text = _read(path)
    try:
        raw = [d for d in yaml.load_all(text, Loader=_BoundedLoader) if d is not None]  # a SafeLoader
    except yaml.YAMLError as exc:
        raise CliError(f"{path}: not valid YAML: {' '.join(str(exc).split())}", code=2) from exc
    if _count_values(raw, MAX_VALUES) > MAX_VALUES:
        raise CliError(f"{path}: expands to more than {MAX_VALUES:,} values (YAML aliases?)", code=2)
    docs: list[dict[str, Any]] = []
    for index, doc in enumerate(raw):
        if not isinstance(doc, dict):
            raise CliError(f"{path}: document {index} is not an object (got {type(doc).__name__})", code=2)
        if doc.get("kind") == "List":
            items = doc.get("items")
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise CliError(f"{path}: document {index}: items must be a list of objects", code=2)
            docs.extend(items)
        else:
            docs.append(doc)
    if not docs:
        raise CliError(f"{path}: no objects found", code=2)
    return docs


def _count_values(node: object, limit: int) -> int:
    """Values in `node` with aliases expanded, counting no further than just past `limit`."""
    if isinstance(node, dict):
        node = [*node.keys(), *node.values()]
    if not isinstance(node, list):
        return 1
    total = 1
    for item in node:
        total += _count_values(item, limit - total)
        if total > limit:
            break
    return total


def _read(path: str) -> str:
    try:
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1) if path == "-" else _read_file(Path(path))
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}", code=2) from exc
    if len(data) > MAX_FILE_BYTES:
        raise CliError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB (the API's request limit)", code=2)
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text (byte {exc.start})", code=2) from exc


def _read_file(file: Path) -> bytes:
    if not file.exists():
        raise CliError(f"{file}: no such file", code=2)
    if file.is_dir():
        raise CliError(f"{file}: is a directory", code=2)
    with file.open("rb") as stream:
        return stream.read(MAX_FILE_BYTES + 1)  # never more than one byte past the limit

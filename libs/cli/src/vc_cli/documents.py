"""Read user files: one or more YAML/JSON documents (or a `kind: List`), with errors naming the document."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from vc_cli.errors import CliError

MAX_FILE_BYTES = 16 * 1024 * 1024


def read_documents(path: str) -> list[dict[str, Any]]:
    text = _read(path)
    try:
        raw = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise CliError(f"{path}: not valid YAML: {exc}") from exc
    docs: list[dict[str, Any]] = []
    for index, doc in enumerate(raw):
        if not isinstance(doc, dict):
            raise CliError(f"{path}: document {index} is not an object (got {type(doc).__name__})")
        if doc.get("kind") == "List":
            items = doc.get("items")
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise CliError(f"{path}: document {index}: items must be a list of objects")
            docs.extend(items)
        else:
            docs.append(doc)
    if not docs:
        raise CliError(f"{path}: no objects found")
    return docs


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read(MAX_FILE_BYTES + 1)
    file = Path(path)
    if not file.exists():
        raise CliError(f"{path}: no such file")
    if file.stat().st_size > MAX_FILE_BYTES:
        raise CliError(f"{path}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return file.read_text()

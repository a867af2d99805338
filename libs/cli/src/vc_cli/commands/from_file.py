"""What the verbs that act on a file's objects share (`vcctl apply -f`, `vcctl delete -f`): their flags,
reading the file before connecting, and one line per document, an error naming the document."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from vc_cli.documents import read_documents
from vc_cli.errors import CliError


def add_file_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--filename", required=True)
    parser.add_argument("-n", "--namespace")
    parser.set_defaults(prepare=_read)  # the file is read and checked before connecting


def _read(args: argparse.Namespace) -> None:
    args.documents = read_documents(args.filename)


async def for_each_document(documents: list[dict[str, Any]], act: Callable[[dict[str, Any]], Awaitable[str]]) -> int:
    """`act` on every document in turn (it returns the line to print); a refusal is printed and the rest
    still go. The exit code: 1 when any document failed."""
    failed = 0
    for index, doc in enumerate(documents):
        try:
            done = await act(doc)
        except CliError as exc:
            failed += 1
            print(f"error: document {index} ({label(doc)}): {exc}", flush=True, file=sys.stderr)
            continue
        print(done)
    return 1 if failed else 0


def label(doc: dict[str, Any]) -> str:
    """kind/name of a document as sent, whatever shape it has (metadata may be anything: found by fuzzing)."""
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return f"{doc.get('kind')}/{name}"

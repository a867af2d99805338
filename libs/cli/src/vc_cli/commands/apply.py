"""vcctl apply -f FILE: create or update any supported object (Queue, Job, PodGroup, Pod, ...)."""

from __future__ import annotations

import argparse

from vc_cli.client import Tephra
from vc_cli.documents import read_documents
from vc_cli.errors import CliError


def add_parser(sub: argparse._SubParsersAction) -> None:
    apply = sub.add_parser("apply", help="create or update objects from a file (- for stdin)")
    apply.add_argument("-f", "--filename", required=True)
    apply.add_argument("-n", "--namespace")
    apply.set_defaults(prepare=_read)  # the file is read and checked before connecting


def _read(args: argparse.Namespace) -> None:
    args.documents = read_documents(args.filename)


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    failed = 0
    for index, doc in enumerate(args.documents):
        try:
            obj = await tephra.submit("apply", doc, namespace=args.namespace)
        except CliError as exc:
            failed += 1
            print(
                f"error: document {index} ({_label(doc)}): {exc}",
                flush=True,
                file=__import__("sys").stderr,
            )
            continue
        print(f"{type(obj).__name__.lower()}/{obj.metadata.name} applied")
    return 1 if failed else 0


def _label(doc: dict[str, object]) -> str:
    """kind/name of a document as sent, whatever shape it has (metadata may be anything: found by fuzzing)."""
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return f"{doc.get('kind')}/{name}"

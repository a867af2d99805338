"""vcctl delete -f FILE: delete the objects a file names, as `kubectl delete -f` does: what `vcctl apply -f`
made (a ResourceQuota, a PodDisruptionBudget, a Queue...) goes with the same file. Only each document's
kind, namespace and name are read; the rest of it is not compared with what is stored."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from vc_cli.client import Tephra
from vc_cli.documents import read_documents
from vc_cli.errors import CliError
from vc_proto import api
from vc_proto.kinds import KINDS


def add_parser(sub: argparse._SubParsersAction) -> None:
    delete = sub.add_parser("delete", help="delete the objects a file names (- for stdin)")
    delete.add_argument("-f", "--filename", required=True)
    delete.add_argument("-n", "--namespace")
    delete.set_defaults(prepare=_read)  # the file is read and checked before connecting


def _read(args: argparse.Namespace) -> None:
    args.documents = read_documents(args.filename)


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    failed = 0
    for index, doc in enumerate(args.documents):
        try:
            kind, namespace, name = target(doc, args.namespace)
            await tephra.write(api.WriteRequest(operation="delete", kind=kind, namespace=namespace, name=name))
        except CliError as exc:
            failed += 1
            print(f"error: document {index} ({doc.get('kind')}): {exc}", flush=True, file=sys.stderr)
            continue
        print(f"{kind.lower()}/{name} deleted")
    return 1 if failed else 0


def target(doc: dict[str, Any], namespace: str | None) -> tuple[str, str | None, str]:
    """(kind, namespace, name) of the object a document names; -n fills a namespace the document leaves out."""
    kind = doc.get("kind")
    row = KINDS.get(kind) if isinstance(kind, str) else None
    if row is None:
        raise CliError(f"unsupported kind {kind!r}", code=2)
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        raise CliError("metadata.name is required to delete", code=2)
    if not row.namespaced:
        return row.kind, None, name
    written = metadata.get("namespace") if isinstance(metadata, dict) else None
    if namespace and written and written != namespace:
        raise CliError(f"the object is in namespace {written!r} but -n says {namespace!r}", code=2)
    return row.kind, str(written or namespace or "default"), name

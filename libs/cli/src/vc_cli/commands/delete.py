"""vcctl delete -f FILE: delete the objects a file names, as `kubectl delete -f` does: what `vcctl apply -f`
made (a ResourceQuota, a PodDisruptionBudget, a Queue...) goes with the same file. Only each document's
kind, namespace and name are read; the rest of it is not compared with what is stored."""

from __future__ import annotations

import argparse
from typing import Any

from vc_cli.client import Tephra
from vc_cli.commands.from_file import add_file_arguments, for_each_document
from vc_cli.errors import CliError
from vc_proto import api
from vc_proto.kinds import KINDS


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_file_arguments(sub.add_parser("delete", help="delete the objects a file names (- for stdin)"))


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    async def delete(doc: dict[str, Any]) -> str:
        kind, namespace, name = target(doc, args.namespace)
        await tephra.write(api.Delete(kind=kind, namespace=namespace, name=name))
        return f"{kind.lower()}/{name} deleted"

    return await for_each_document(args.documents, delete)


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

"""vcctl apply -f FILE: create or update any supported object (Queue, Job, PodGroup, Pod, ...)."""

from __future__ import annotations

import argparse
from typing import Any

from vc_cli.client import Tephra
from vc_cli.commands.from_file import add_file_arguments, for_each_document
from vc_proto import api


def add_parser(sub: argparse._SubParsersAction) -> None:
    add_file_arguments(sub.add_parser("apply", help="create or update objects from a file (- for stdin)"))


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    async def apply(doc: dict[str, Any]) -> str:
        obj = await tephra.submit(api.Apply, doc, namespace=args.namespace)
        return f"{type(obj).__name__.lower()}/{obj.metadata.name} applied"

    return await for_each_document(args.documents, apply)

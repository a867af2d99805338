"""The verbs `vcctl jobflow`, `jobtemplate` and `cronjob` share, as Volcano's vcctl jobflow spells them:
`create -f FILE`, `list [-n NS | -A]`, `get -N NAME`, `describe [-N NAME]`, `delete -N NAME | -f FILE`,
each with `-o json|yaml` where it prints objects.

`describe` prints a readable summary; with `-o yaml` or `-o json` it prints the object itself, which is
what Volcano's `vcctl jobflow describe` prints (yaml by default there). Writes go through admission (or,
with `--backend kube`, the apiserver and its webhooks), so a refused object exits 1 with the reason.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from vc_cli import listing
from vc_cli.client import Tephra
from vc_cli.documents import read_documents
from vc_cli.errors import CliError, not_found
from vc_cli.flags import add_list_flags, listing_for, namespace_of
from vc_cli.listing import Columns
from vc_cli.output import add_output_flags, print_objects
from vc_core.errors import NotFound
from vc_proto import api
from vc_proto.kinds import KubeObject

W = TypeVar("W", bound=KubeObject)
OBJECT_FORMATS = ("json", "yaml")


@dataclass(frozen=True)
class Workload(Generic[W]):
    command: str  # jobflow
    kind: type[W]
    columns: Columns[W]
    describe: Callable[[W], list[str]]

    @property
    def kind_name(self) -> str:
        return self.kind.__name__


def add_verbs(sub: argparse._SubParsersAction, workload: Workload[Any], *, help: str) -> None:
    kind = workload.kind_name
    parser = sub.add_parser(workload.command, help=help)
    verbs = parser.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help=f"create {kind}s from a file (- for stdin)")
    create.add_argument("-f", "--file", "--filename", dest="file", required=True, help=f"YAML or JSON of {kind}s")
    create.add_argument("-n", "--namespace", help="the namespace of objects that name none (default: default)")
    create.set_defaults(prepare=_reader(kind))
    lst = verbs.add_parser("list", help=f"list {kind}s")
    add_list_flags(lst)
    get = verbs.add_parser("get", help=f"show one {kind}")
    _name_flags(get, kind, required=True)
    add_output_flags(get)
    describe = verbs.add_parser("describe", help=f"describe a {kind} (every one in the namespace without -N)")
    _name_flags(describe, kind, required=False)
    describe.add_argument("-o", "--output", "--format", choices=OBJECT_FORMATS, help="print the object instead")
    delete = verbs.add_parser("delete", help=f"delete a {kind} by name, or those a file names")
    _name_flags(delete, kind, required=False)
    delete.add_argument("-f", "--file", help=f"delete the {kind}s this file holds")
    delete.set_defaults(prepare=_delete_target(kind))


def _name_flags(parser: argparse.ArgumentParser, kind: str, *, required: bool) -> None:
    parser.add_argument("-N", "--name", required=required, help=f"the {kind}'s name")
    parser.add_argument("-n", "--namespace", default="default", help=f"the {kind}'s namespace (default: default)")


def _reader(kind: str) -> Callable[[argparse.Namespace], None]:
    def read(args: argparse.Namespace) -> None:
        args.documents = read_documents(args.file)
        wrong = [str(doc.get("kind")) for doc in args.documents if doc.get("kind") != kind]
        if wrong:
            raise CliError(
                f"{args.file}: holds {', '.join(sorted(set(wrong)))}, not {kind} (use `vcctl apply`)", code=2
            )

    return read


def _delete_target(kind: str) -> Callable[[argparse.Namespace], None]:
    def check(args: argparse.Namespace) -> None:
        if bool(args.name) == bool(args.file):
            raise CliError("delete needs exactly one of -N/--name and -f/--file", code=2)
        if args.file:
            _reader(kind)(args)

    return check


async def run(workload: Workload[Any], tephra: Tephra, args: argparse.Namespace) -> int:
    verbs = {"create": _create, "list": _list, "get": _get, "describe": _describe, "delete": _delete}
    return await verbs[args.verb](workload, tephra, args)


async def _create(workload: Workload[Any], tephra: Tephra, args: argparse.Namespace) -> int:
    failed = 0
    for doc in args.documents:
        try:
            obj = await tephra.submit(api.Create, doc, namespace=args.namespace)
        except CliError as exc:
            failed += 1
            name = (doc.get("metadata") or {}).get("name")
            print(f"error: {workload.kind_name} {name}: {exc}", file=sys.stderr, flush=True)
            continue
        print(f"Created {workload.kind_name}: {obj.metadata.namespace}/{obj.metadata.name}")
    return 1 if failed else 0


async def _list(workload: Workload[Any], tephra: Tephra, args: argparse.Namespace) -> int:
    view = listing_for(args, workload.columns)
    if args.watch:
        await listing.watch(tephra.store, workload.kind, view, namespace=namespace_of(args), selector=args.selector)
        return 0
    objs, _ = await tephra.store.list(workload.kind, namespace_of(args))
    view.print_list(listing.sort_objects(o for o in objs if args.selector.matches(o.metadata.labels)))
    return 0


async def fetch(workload: Workload[W], tephra: Tephra, namespace: str, name: str) -> W:
    try:
        return await tephra.store.get(workload.kind, namespace, name)
    except NotFound as exc:
        raise not_found(workload.command, f"{namespace}/{name}") from exc


async def _get(workload: Workload[Any], tephra: Tephra, args: argparse.Namespace) -> int:
    obj = await fetch(workload, tephra, args.namespace, args.name)
    if args.output.is_table:
        listing_for(args, workload.columns).print_list([obj])
    else:
        print_objects([obj], args.output, single=True)
    return 0


async def _describe(workload: Workload[Any], tephra: Tephra, args: argparse.Namespace) -> int:
    if args.name:
        objs = [await fetch(workload, tephra, args.namespace, args.name)]
    else:
        objs = listing.sort_objects((await tephra.store.list(workload.kind, args.namespace))[0])
        if not objs:
            print("No resources found")
            return 0
    for index, obj in enumerate(objs):
        if index:
            print()
        if args.output:
            print_objects([obj], args.output, single=True)
        else:
            print("\n".join(workload.describe(obj)))
    return 0


async def _delete(workload: Workload[Any], tephra: Tephra, args: argparse.Namespace) -> int:
    if args.name:
        targets = [(args.namespace, args.name)]
    else:
        targets = [
            (
                (d.get("metadata") or {}).get("namespace") or args.namespace,
                str((d.get("metadata") or {}).get("name") or ""),
            )
            for d in args.documents
        ]
    for namespace, name in targets:
        request = api.Delete(kind=workload.kind_name, namespace=namespace, name=name)
        try:
            await tephra.write(request)
        except NotFound as exc:
            raise not_found(workload.command, f"{namespace}/{name}") from exc
        print(f"Deleted {workload.kind_name}: {namespace}/{name}")
    return 0


def field_lines(pairs: list[tuple[str, object]]) -> list[str]:
    """`Label:   value` lines, the values aligned (absent values print as `<none>`)."""
    width = max(len(label) for label, _ in pairs) + 2
    return [f"{label + ':':<{width}}{'<none>' if value in (None, '') else value}" for label, value in pairs]

"""vcctl queue create|list|get|delete|operate."""

from __future__ import annotations

import argparse
from collections import Counter

from vc_cli.client import Tephra
from vc_cli.commands.common import command_document, parse_resource_list
from vc_cli.errors import CliError
from vc_cli.output import print_objects, print_table
from vc_core.errors import NotFound
from vc_proto import api
from vc_proto.meta import OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue
from vc_proto.vocabulary import Action

PHASES = ("Inqueue", "Pending", "Running", "Unknown", "Completed")


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    queue = sub.add_parser("queue", help="queues").add_subparsers(dest="verb", required=True)
    create = queue.add_parser("create", help="create a queue")
    create.add_argument("-N", "--name", required=True)
    create.add_argument("-w", "--weight", type=int, default=1)
    create.add_argument("--capability", help="e.g. cpu=4,memory=8Gi,nvidia.com/gpu=2")
    create.add_argument("--deserved")
    create.add_argument("--guarantee")
    create.add_argument("--parent")
    create.add_argument("--reclaimable", choices=["true", "false"])
    create.add_argument("--allowed-namespaces", help="comma-separated namespaces allowed to submit (default: all)")
    lst = queue.add_parser("list", help="list queues with PodGroup counts")
    lst.add_argument("-o", "--output", choices=["json", "yaml"])
    get = queue.add_parser("get", help="show one queue")
    get.add_argument("-N", "--name", required=True)
    get.add_argument("-o", "--output", choices=["json", "yaml"])
    delete = queue.add_parser("delete", help="delete a queue")
    delete.add_argument("-N", "--name", required=True)
    operate = queue.add_parser("operate", help="open or close a queue, or update its weight")
    operate.add_argument("-N", "--name", required=True)
    operate.add_argument("-a", "--action", required=True, choices=["open", "close", "update"])
    operate.add_argument("-w", "--weight", type=int)


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    return await {"create": _create, "list": _list, "get": _get, "delete": _delete, "operate": _operate}[args.verb](tephra, args)


async def _create(tephra: Tephra, args: argparse.Namespace) -> int:
    spec: dict[str, object] = {"weight": args.weight}
    for key in ("capability", "deserved"):
        value = parse_resource_list(getattr(args, key), flag=f"--{key}")
        if value:
            spec[key] = value
    guarantee = parse_resource_list(args.guarantee, flag="--guarantee")
    if guarantee:
        spec["guarantee"] = {"resource": guarantee}
    if args.parent:
        spec["parent"] = args.parent
    if args.reclaimable:
        spec["reclaimable"] = args.reclaimable == "true"
    if args.allowed_namespaces:
        spec["allowedNamespaces"] = [n for n in args.allowed_namespaces.split(",") if n]
    doc = {"apiVersion": SCHEDULING_V1BETA1, "kind": "Queue", "metadata": {"name": args.name}, "spec": spec}
    await tephra.submit("create", doc)
    print(f"create queue {args.name} successfully")
    return 0


async def _counts(tephra: Tephra) -> dict[str, Counter[str]]:
    groups, _ = await tephra.store.list(PodGroup)
    counts: dict[str, Counter[str]] = {}
    for pg in groups:
        queue = (pg.spec.queue if pg.spec else None) or "default"
        counts.setdefault(queue, Counter())[(pg.status.phase if pg.status else None) or "Pending"] += 1
    return counts


def _rows(queues: list[Queue], counts: dict[str, Counter[str]]) -> list[list[object]]:
    rows = []
    for q in sorted(queues, key=lambda q: q.metadata.name or ""):
        c = counts.get(q.metadata.name or "", Counter())
        state = (q.status.state if q.status else None) or "Open"
        parent = (q.spec.parent if q.spec else None) or ""
        rows.append([q.metadata.name, (q.spec.weight if q.spec else None) or 1, state, parent, *(c[p] for p in PHASES)])
    return rows


HEADERS = ["Name", "Weight", "State", "Parent", *PHASES]


async def _list(tephra: Tephra, args: argparse.Namespace) -> int:
    queues, _ = await tephra.store.list(Queue)
    if args.output:
        print_objects(queues, args.output, single=False)
        return 0
    print_table(HEADERS, _rows(queues, await _counts(tephra)))
    return 0


async def _get_queue(tephra: Tephra, name: str) -> Queue:
    try:
        return await tephra.store.get(Queue, None, name)
    except NotFound as exc:
        raise CliError(f"queue {name} not found") from exc


async def _get(tephra: Tephra, args: argparse.Namespace) -> int:
    queue = await _get_queue(tephra, args.name)
    if args.output:
        print_objects([queue], args.output, single=True)
        return 0
    print_table(HEADERS, _rows([queue], await _counts(tephra)))
    return 0


async def _delete(tephra: Tephra, args: argparse.Namespace) -> int:
    await tephra.write(api.WriteRequest(operation="delete", kind="Queue", name=args.name))
    print(f"delete queue {args.name} successfully")
    return 0


async def _operate(tephra: Tephra, args: argparse.Namespace) -> int:
    queue = await _get_queue(tephra, args.name)
    if args.action == "update":
        if args.weight is None or args.weight <= 0:
            raise CliError("--weight must be given and > 0 with --action update", code=2)
        from vc_proto import codec

        doc = codec.to_dict(queue)
        doc.setdefault("spec", {})["weight"] = args.weight
        await tephra.submit("update", doc)
        print(f"update queue {args.name} successfully")
        return 0
    action = Action.OPEN_QUEUE if args.action == "open" else Action.CLOSE_QUEUE
    target = OwnerReference(api_version=SCHEDULING_V1BETA1, kind="Queue", name=args.name, uid=queue.metadata.uid or "")
    await tephra.submit("create", command_document(action=action.value, namespace="default", target=target))
    print(f"{args.action} queue {args.name} successfully")
    return 0

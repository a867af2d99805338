"""vcctl node list|ready|not-ready: inspect simulated nodes and make them (Not)Ready."""

from __future__ import annotations

import argparse
import json

import nats.errors

from vc_cli import listing
from vc_cli.client import Tephra
from vc_cli.errors import CliError
from vc_cli.flags import add_list_flags, listing_for
from vc_cli.listing import Columns
from vc_proto import subjects
from vc_proto.core import Node


def _node_row(n: Node) -> list[object]:
    ready = next((c.status for c in (n.status.conditions if n.status else None) or [] if c.type == "Ready"), "Unknown")
    alloc = (n.status.allocatable if n.status else None) or {}
    return [
        n.metadata.name,
        "Ready" if ready == "True" else "NotReady",
        alloc.get("cpu", ""),
        alloc.get("memory", ""),
        alloc.get("nvidia.com/gpu", "0"),
        alloc.get("pods", ""),
    ]


NODE_COLUMNS: Columns[Node] = Columns(headers=["Name", "Status", "CPU", "Memory", "GPU", "Pods"], row=_node_row)


def add_parser(sub: argparse._SubParsersAction) -> None:
    node = sub.add_parser("node", help="nodes (simulated by node-sim)").add_subparsers(dest="verb", required=True)
    lst = node.add_parser("list", help="nodes with readiness and allocatable resources")
    add_list_flags(lst, namespaced=False)
    for verb in ("ready", "not-ready"):
        p = node.add_parser(verb, help=f"make a simulated node {verb.replace('-', ' ').title()}")
        p.add_argument("name")


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    if args.verb == "list":
        view = listing_for(args, NODE_COLUMNS)
        if args.watch:
            await listing.watch(tephra.store, Node, view, selector=args.selector)
            return 0
        nodes, _ = await tephra.store.list(Node)
        view.print_list(listing.sort_objects(n for n in nodes if args.selector.matches(n.metadata.labels)))
        return 0
    request = {"node": args.name, "ready": args.verb == "ready"}
    try:
        msg = await tephra.nc.request(subjects.NODE_SIM_CONTROL, json.dumps(request).encode(), timeout=10)
    except nats.errors.NoRespondersError as exc:
        raise CliError("no node-sim is running") from exc
    reply = json.loads(msg.data)
    if "error" in reply:
        raise CliError(reply["error"])
    print(f"node {args.name} is now {'Ready' if request['ready'] else 'NotReady'}")
    return 0

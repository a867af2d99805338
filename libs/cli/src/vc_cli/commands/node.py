"""vcctl node list|describe|ready|not-ready: inspect nodes (their allocation with -o wide, their pods with
describe) and make simulated nodes (Not)Ready."""

from __future__ import annotations

import argparse
import json

import nats.errors

from vc_cli import listing
from vc_cli.allocation import NODE_WIDE_HEADERS, node_wide_row, pods_by_node
from vc_cli.client import Tephra
from vc_cli.describe_node import describe_node
from vc_cli.errors import CliError, not_found
from vc_cli.flags import add_list_flags, listing_for
from vc_cli.listing import Columns
from vc_core.errors import NotFound
from vc_proto import subjects
from vc_proto.core import Node, Pod


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
    lst = node.add_parser("list", help="nodes with readiness and allocatable resources (-o wide: what is allocated)")
    add_list_flags(lst, namespaced=False)
    describe = node.add_parser("describe", help="one node: allocatable, allocated resources and its pods")
    describe.add_argument("name")
    for verb in ("ready", "not-ready"):
        p = node.add_parser(verb, help=f"make a simulated node {verb.replace('-', ' ').title()}")
        p.add_argument("name")


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    if args.verb == "describe":
        return await describe(tephra, args.name)
    if args.verb == "list":
        columns = NODE_COLUMNS
        if args.output.kind == "wide":  # what the pods bound to each node request (as the list starts)
            placed = pods_by_node((await tephra.store.list(Pod))[0])
            columns = Columns(
                NODE_COLUMNS.headers,
                NODE_COLUMNS.row,
                wide_headers=NODE_WIDE_HEADERS,
                wide_row=lambda n: node_wide_row(n, placed),
            )
        view = listing_for(args, columns)
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


async def describe(tephra: Tephra, name: str) -> int:
    """Print one node's page: allocatable, allocated resources and its pods (also `vcctl describe node`)."""
    try:
        node = await tephra.store.get(Node, None, name)
    except NotFound as exc:
        raise not_found("node", name) from exc
    pods = pods_by_node((await tephra.store.list(Pod))[0]).get(name, [])
    for line in describe_node(node, pods):
        print(line)
    return 0

"""vcctl podgroup list|get|describe: the PodGroups the scheduler gang-schedules (Volcano's CRD columns)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from vc_cli import listing
from vc_cli.client import Tephra
from vc_cli.commands.describe import describe_podgroup, get_podgroup
from vc_cli.flags import add_list_flags, add_name_flags, listing_for, namespace_of
from vc_cli.listing import Columns
from vc_cli.output import add_output_flags, age, print_objects
from vc_proto.scheduling import PodGroup

# The CRD's printer columns (STATUS, minMember, RUNNINGS, AGE; QUEUE at -o wide), in vcctl's spelling.
PODGROUP_COLUMNS: Columns[PodGroup] = Columns(
    headers=["Name", "Status", "MinMember", "Runnings", "Age"],
    row=lambda pg: [
        pg.metadata.name,
        (pg.status.phase if pg.status else None) or "Pending",
        (pg.spec.min_member if pg.spec else None) or 0,
        (pg.status.running if pg.status else None) or 0,
        age(pg.metadata.creation_timestamp),
    ],
    wide_headers=["Queue"],
    wide_row=lambda pg: [(pg.spec.queue if pg.spec else None) or "default"],
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    podgroup = sub.add_parser("podgroup", help="PodGroups (the gangs the scheduler places)")
    verbs = podgroup.add_subparsers(dest="verb", required=True)
    lst = verbs.add_parser("list", help="list PodGroups")
    add_list_flags(lst)
    lst.add_argument("-q", "--queue", help="only PodGroups in this queue")
    get = verbs.add_parser("get", help="show one PodGroup")
    add_name_flags(get, what="PodGroup")
    add_output_flags(get)
    describe = verbs.add_parser("describe", help="describe one PodGroup: conditions, pods, events")
    add_name_flags(describe, what="PodGroup")


def _keep(args: argparse.Namespace) -> Callable[[PodGroup], bool]:
    return lambda pg: not args.queue or ((pg.spec.queue if pg.spec else None) or "default") == args.queue


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    if args.verb == "describe":
        for line in await describe_podgroup(tephra, await get_podgroup(tephra, args.namespace, args.name)):
            print(line)
        return 0
    if args.verb == "get":
        pg = await get_podgroup(tephra, args.namespace, args.name)
        if args.output.is_table:
            listing_for(args, PODGROUP_COLUMNS).print_list([pg])
        else:
            print_objects([pg], args.output, single=True)
        return 0
    view = listing_for(args, PODGROUP_COLUMNS)
    keep = _keep(args)
    if args.watch:
        await listing.watch(
            tephra.store, PodGroup, view, namespace=namespace_of(args), selector=args.selector, keep=keep
        )
        return 0
    groups, _ = await tephra.store.list(PodGroup, namespace_of(args))
    view.print_list(listing.sort_objects(g for g in groups if keep(g) and args.selector.matches(g.metadata.labels)))
    return 0

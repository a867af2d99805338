"""vcctl pod list, with Volcano's flags (pkg/cli/pod): -j/--job, -q/--queue, -n, --all-namespaces."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from vc_cli import listing
from vc_cli.client import Tephra
from vc_cli.flags import add_list_flags, listing_for, namespace_of
from vc_cli.listing import Columns
from vc_cli.output import age
from vc_proto.core import Pod
from vc_proto.vocabulary import JOB_NAME_KEY, QUEUE_NAME_ANNOTATION, QUEUE_NAME_KEY


def add_parser(sub: argparse._SubParsersAction) -> None:
    pod = sub.add_parser("pod", help="pods").add_subparsers(dest="verb", required=True)
    lst = pod.add_parser("list", help="pods with their status and node")
    add_list_flags(lst)
    lst.add_argument("-j", "--job", help="only the pods of this vcjob")
    lst.add_argument("-q", "--queue", help="only the pods in this queue")


def _ready(pod: Pod) -> str:
    statuses = (pod.status.container_statuses if pod.status else None) or []
    total = len((pod.spec.containers if pod.spec else None) or []) or len(statuses)
    return f"{sum(1 for s in statuses if s.ready)}/{total}"


def _status(pod: Pod) -> str:
    if pod.metadata.deletion_timestamp:
        return "Terminating"
    return (pod.status.phase if pod.status else None) or "Pending"


def _restarts(pod: Pod) -> int:
    return sum(s.restart_count for s in (pod.status.container_statuses if pod.status else None) or [])


# Volcano's columns (Name Ready Status Restart Age), then the node Tephra has always shown.
POD_COLUMNS: Columns[Pod] = Columns(
    headers=["Name", "Ready", "Status", "Restart", "Age", "Node"],
    row=lambda p: [
        p.metadata.name,
        _ready(p),
        _status(p),
        _restarts(p),
        age(p.metadata.creation_timestamp),
        (p.spec.node_name if p.spec else None) or "<none>",
    ],
    wide_headers=["Job", "Queue"],
    wide_row=lambda p: [(p.metadata.labels or {}).get(JOB_NAME_KEY, ""), _queue(p)],
)


def _queue(pod: Pod) -> str:
    """A vcjob's pod carries its queue as a label; other pods for Volcano, as an annotation."""
    return (pod.metadata.labels or {}).get(QUEUE_NAME_KEY) or (pod.metadata.annotations or {}).get(
        QUEUE_NAME_ANNOTATION, ""
    )


def _keep(args: argparse.Namespace) -> Callable[[Pod], bool]:
    def keep(pod: Pod) -> bool:
        if args.job and (pod.metadata.labels or {}).get(JOB_NAME_KEY) != args.job:
            return False
        return not args.queue or _queue(pod) == args.queue

    return keep


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    view = listing_for(args, POD_COLUMNS)
    keep = _keep(args)
    if args.watch:
        await listing.watch(tephra.store, Pod, view, namespace=namespace_of(args), selector=args.selector, keep=keep)
        return 0
    pods, _ = await tephra.store.list(Pod, namespace_of(args))
    view.print_list(listing.sort_objects(p for p in pods if keep(p) and args.selector.matches(p.metadata.labels)))
    return 0

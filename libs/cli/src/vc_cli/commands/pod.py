"""vcctl pod list."""

from __future__ import annotations

import argparse

from vc_cli.client import Tephra
from vc_cli.output import age, print_objects, print_table
from vc_proto.core import Pod
from vc_proto.vocabulary import JOB_NAME_KEY, QUEUE_NAME_KEY


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    pod = sub.add_parser("pod", help="pods").add_subparsers(dest="verb", required=True)
    lst = pod.add_parser("list", help="pods with phase and node")
    lst.add_argument("-n", "--namespace", default="default")
    lst.add_argument("--all-namespaces", "-A", action="store_true")
    lst.add_argument("-j", "--job")
    lst.add_argument("-q", "--queue")
    lst.add_argument("-o", "--output", choices=["json", "yaml", "wide"])


def _ready(pod: Pod) -> str:
    statuses = (pod.status.container_statuses if pod.status else None) or []
    total = len((pod.spec.containers if pod.spec else None) or []) or len(statuses)
    return f"{sum(1 for s in statuses if s.ready)}/{total}"


def _status(pod: Pod) -> str:
    if pod.metadata.deletion_timestamp:
        return "Terminating"
    return (pod.status.phase if pod.status else None) or "Pending"


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    pods, _ = await tephra.store.list(Pod, None if args.all_namespaces else args.namespace)
    labels = lambda p: p.metadata.labels or {}  # noqa: E731
    pods = [p for p in pods if (not args.job or labels(p).get(JOB_NAME_KEY) == args.job)
            and (not args.queue or labels(p).get(QUEUE_NAME_KEY) == args.queue)]
    pods.sort(key=lambda p: (p.metadata.namespace or "", p.metadata.name or ""))
    if args.output in ("json", "yaml"):
        print_objects(pods, args.output, single=False)
        return 0
    headers = ["Name", "Ready", "Status", "Restarts", "Node", "Age"]
    rows: list[list[object]] = []
    for p in pods:
        restarts = sum(s.restart_count for s in (p.status.container_statuses if p.status else None) or [])
        rows.append([p.metadata.name, _ready(p), _status(p), restarts, (p.spec.node_name if p.spec else None) or "<none>",
                     age(p.metadata.creation_timestamp)])
    if args.all_namespaces:
        headers = ["Namespace", *headers]
        rows = [[p.metadata.namespace, *r] for p, r in zip(pods, rows, strict=True)]
    print_table(headers, rows)
    return 0

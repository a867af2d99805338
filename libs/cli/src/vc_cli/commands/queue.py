"""vcctl queue create|list|get|describe|delete|operate, with Volcano's flags (pkg/cli/queue).

Volcano names the queue with `-n/--name` (queues have no namespace); Tephra's earlier `-N` is
accepted too. `create` takes Volcano's `-w/--weight` and `-S/--state`, `operate` its `-a/--action`.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Mapping

from vc_cli import listing
from vc_cli.allocation import QUEUE_WIDE_HEADERS, queue_wide_row
from vc_cli.client import Tephra
from vc_cli.commands.common import command_document, parse_resource_list
from vc_cli.commands.describe import describe_queue, get_queue
from vc_cli.errors import CliError
from vc_cli.flags import add_list_flags, listing_for, set_prepare
from vc_cli.listing import Columns, Key, Related
from vc_cli.output import add_output_flags, print_objects
from vc_core.store import WatchEvent, WatchOp
from vc_proto import api, codec
from vc_proto.meta import OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue, QueueStatus
from vc_proto.vocabulary import Action

PHASES = ("Inqueue", "Pending", "Running", "Unknown", "Completed")
STATES = ("Open", "Closed")  # what Volcano's admission lets a new queue ask for


def _name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "-N", "--name", dest="name", required=True, help="the queue's name")


def add_parser(sub: argparse._SubParsersAction) -> None:
    queue = sub.add_parser("queue", help="queues").add_subparsers(dest="verb", required=True)
    create = queue.add_parser("create", help="create a queue")
    _name(create)
    create.add_argument("-w", "--weight", type=int, default=1, help="the queue's weight (default 1)")
    create.add_argument("-S", "--state", type=_state, help="Open (default) or Closed")
    create.add_argument("--capability", help="e.g. cpu=4,memory=8Gi,nvidia.com/gpu=2")
    create.add_argument("--deserved")
    create.add_argument("--guarantee")
    create.add_argument("--parent")
    create.add_argument("--reclaimable", choices=["true", "false"])
    create.add_argument("--allowed-namespaces", help="comma-separated namespaces allowed to submit (default: all)")
    set_prepare(create, _prepare_create)
    lst = queue.add_parser("list", help="list queues with PodGroup counts")
    add_list_flags(lst, namespaced=False)
    get = queue.add_parser("get", help="show one queue")
    _name(get)
    add_output_flags(get)
    describe = queue.add_parser("describe", help="describe one queue (kubectl describe style)")
    _name(describe)
    delete = queue.add_parser("delete", help="delete a queue")
    _name(delete)
    operate = queue.add_parser("operate", help="open or close a queue, or update its weight")
    _name(operate)
    operate.add_argument("-a", "--action", required=True, choices=["open", "close", "update"])
    operate.add_argument("-w", "--weight", type=int)
    set_prepare(operate, _prepare_operate)


def _state(text: str) -> str:
    for state in STATES:
        if text.lower() == state.lower():
            return state
    raise argparse.ArgumentTypeError(f"queue state must be in [{' '.join(STATES)}] (got {text!r})")


_state.__name__ = "queue state"


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    verbs = {
        "create": _create,
        "list": _list,
        "get": _get,
        "describe": _describe,
        "delete": _delete,
        "operate": _operate,
    }
    return await verbs[args.verb](tephra, args)


# -- create --------------------------------------------------------------------------------------------
def _prepare_create(args: argparse.Namespace) -> None:
    """The queue's document, every flag checked, before connecting."""
    if args.weight <= 0:
        raise CliError("-w/--weight must be greater than 0", code=2)
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
    args.document = {"apiVersion": SCHEDULING_V1BETA1, "kind": "Queue", "metadata": {"name": args.name}, "spec": spec}


async def _create(tephra: Tephra, args: argparse.Namespace) -> int:
    queue = await tephra.submit(api.Create, args.document)
    assert isinstance(queue, Queue)  # admission answers a create with the object it stored
    if args.state == "Closed":
        # A queue's state is its controller's to write (status is not writable through admission), so
        # a queue asked to start Closed is created, then closed with the same Command `operate` sends.
        await _send_command(tephra, queue, Action.CLOSE_QUEUE)
    print(f"create queue {args.name} successfully")
    return 0


# -- list, get -----------------------------------------------------------------------------------------
class PodGroupCounts:
    """Each queue's PodGroups by phase (Volcano's queue list columns), kept from a list or a watch."""

    def __init__(self, groups: Iterable[PodGroup] = ()) -> None:
        self._phase_of: dict[Key, tuple[str, str]] = {}  # PodGroup -> (queue, phase)
        self.counts: dict[str, Counter[str]] = {}
        for pg in groups:
            self.put(pg)

    def put(self, pg: PodGroup) -> str:
        key = listing.key_of(pg)
        self.remove(key)
        where = (
            (pg.spec.queue if pg.spec else None) or "default",
            (pg.status.phase if pg.status else None) or "Pending",
        )
        self._phase_of[key] = where
        self.counts.setdefault(where[0], Counter())[where[1]] += 1
        return where[0]

    def remove(self, key: Key) -> str | None:
        old = self._phase_of.pop(key, None)
        if old is None:
            return None
        self.counts[old[0]][old[1]] -= 1
        return old[0]

    def on_event(self, event: WatchEvent) -> list[Key]:
        """The queues whose counts may have changed, as row keys."""
        key = (event.namespace, event.name)
        before = self.remove(key)
        after = self.put(event.obj) if event.op is WatchOp.PUT and isinstance(event.obj, PodGroup) else None
        return [(None, q) for q in {before, after} if q]

    def row(self, q: Queue) -> list[object]:
        return _row(q, self.counts.get(q.metadata.name or "", Counter()))


class StatusCounts:
    """Each queue's PodGroups by phase as its status says (the queue controller's tally, what Volcano's
    vcctl shows): the counts for a reader held to its own namespaces, who cannot list the PodGroups."""

    def row(self, q: Queue) -> list[object]:
        s = q.status or QueueStatus()
        tally = (s.inqueue, s.pending, s.running, s.unknown, s.completed)
        return _row(q, {phase: count or 0 for phase, count in zip(PHASES, tally, strict=True)})


def _row(q: Queue, counts: Mapping[str, int]) -> list[object]:
    state = (q.status.state if q.status else None) or "Open"
    parent = (q.spec.parent if q.spec else None) or ""
    weight = (q.spec.weight if q.spec else None) or 1
    return [q.metadata.name, weight, state, parent, *(counts.get(p, 0) for p in PHASES)]


HEADERS = ["Name", "Weight", "State", "Parent", *PHASES]


def queue_columns(counts: PodGroupCounts | StatusCounts) -> Columns[Queue]:
    return Columns(headers=HEADERS, row=counts.row, wide_headers=QUEUE_WIDE_HEADERS, wide_row=queue_wide_row)


async def _list(tephra: Tephra, args: argparse.Namespace) -> int:
    scoped = tephra.namespaces is not None
    if args.watch:
        counts = StatusCounts() if scoped else PodGroupCounts()
        related = [] if isinstance(counts, StatusCounts) else [Related(PodGroup, counts.on_event)]
        await listing.watch(
            tephra.store, Queue, listing_for(args, queue_columns(counts)), selector=args.selector, related=related
        )
        return 0
    queues, _ = await tephra.store.list(Queue)
    queues = listing.sort_objects(q for q in queues if args.selector.matches(q.metadata.labels))
    await _print_queues(tephra, args, queues)
    return 0


async def _get(tephra: Tephra, args: argparse.Namespace) -> int:
    queue = await get_queue(tephra, args.name)
    if not args.output.is_table:
        print_objects([queue], args.output, single=True)
        return 0
    await _print_queues(tephra, args, [queue])
    return 0


async def _print_queues(tephra: Tephra, args: argparse.Namespace, queues: list[Queue]) -> None:
    """Counted from every PodGroup when the reader may list them all, else from the queues' status."""
    counts: PodGroupCounts | StatusCounts = StatusCounts()
    if tephra.namespaces is None and args.output.is_table:
        names = {q.metadata.name for q in queues}
        groups = (await tephra.store.list(PodGroup))[0]
        counts = PodGroupCounts(g for g in groups if ((g.spec.queue if g.spec else None) or "default") in names)
    listing_for(args, queue_columns(counts)).print_list(queues)


async def _describe(tephra: Tephra, args: argparse.Namespace) -> int:
    for line in await describe_queue(tephra, await get_queue(tephra, args.name)):
        print(line)
    return 0


# -- delete, operate -----------------------------------------------------------------------------------
async def _delete(tephra: Tephra, args: argparse.Namespace) -> int:
    await tephra.write(api.Delete(kind="Queue", name=args.name))
    print(f"delete queue {args.name} successfully")
    return 0


async def _send_command(tephra: Tephra, queue: Queue, action: Action) -> None:
    target = OwnerReference(
        api_version=SCHEDULING_V1BETA1, kind="Queue", name=queue.metadata.name or "", uid=queue.metadata.uid or ""
    )
    await tephra.submit(api.Create, command_document(action=action.value, namespace="default", target=target))


def _prepare_operate(args: argparse.Namespace) -> None:
    if args.action == "update" and (args.weight is None or args.weight <= 0):
        raise CliError(
            f"when update queue {args.name}, weight must be specified, the value must be greater than 0 (-w)", code=2
        )


async def _operate(tephra: Tephra, args: argparse.Namespace) -> int:
    queue = await get_queue(tephra, args.name)
    if args.action == "update":
        doc = codec.to_dict(queue)
        doc.setdefault("spec", {})["weight"] = args.weight
        await tephra.submit(api.Update, doc)
        print(f"update queue {args.name} successfully")
        return 0
    await _send_command(tephra, queue, Action.OPEN_QUEUE if args.action == "open" else Action.CLOSE_QUEUE)
    print(f"{args.action} queue {args.name} successfully")
    return 0

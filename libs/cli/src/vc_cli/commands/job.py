"""vcctl job run|list|view|describe|suspend|resume|delete|history, with Volcano's flags (pkg/cli/job)."""

from __future__ import annotations

import argparse
from typing import Any

from vc_bus.events import follow
from vc_cli import listing
from vc_cli.client import Tephra
from vc_cli.commands.common import command_document, parse_resource_list
from vc_cli.commands.describe import describe_job
from vc_cli.documents import read_documents
from vc_cli.errors import CliError, not_found
from vc_cli.flags import add_list_flags, add_name_flags, listing_for, namespace_of, set_prepare
from vc_cli.listing import Columns
from vc_cli.output import add_output_flags, date, print_objects
from vc_core.errors import NotFound
from vc_core.quantity import parse_quantity
from vc_proto import api, subjects
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.meta import OwnerReference
from vc_proto.vocabulary import JOB_TYPE_KEY, Action

MAX_FLAG_REPLICAS = 100_000  # admission's own bound on a job's replicas


def add_parser(sub: argparse._SubParsersAction) -> None:
    job = sub.add_parser("job", help="Volcano jobs").add_subparsers(dest="verb", required=True)
    run = job.add_parser("run", help="create a job from a file, or from flags (-N NAME -i IMAGE -r REPLICAS ...)")
    run.add_argument("-f", "--filename", help="YAML or JSON file of Job objects (- for stdin)")
    run.add_argument("-n", "--namespace", help="the namespace (default: the file's, else default)")
    run.add_argument("-N", "--name", help="without -f: the job's name")
    run.add_argument("-i", "--image", default="busybox", help="without -f: the container image (default busybox)")
    run.add_argument("-m", "--min", type=int, default=1, help="without -f: minAvailable (default 1)")
    run.add_argument("-r", "--replicas", type=int, default=1, help="without -f: the task's replicas (default 1)")
    run.add_argument("-R", "--requests", default="cpu=1000m,memory=100Mi", help="without -f: the task's requests")
    run.add_argument(
        "-L", "--limits", default=DEFAULT_LIMITS, help=f"without -f: the task's limits (default {DEFAULT_LIMITS})"
    )
    run.add_argument("-S", "--scheduler", default="volcano", help="without -f: schedulerName (default volcano)")
    run.add_argument("-q", "--queue", help="the queue to submit to (default: the file's spec.queue, else default)")
    set_prepare(run, _prepare_run)

    lst = job.add_parser("list", help="list jobs")
    add_list_flags(lst)
    lst.add_argument("-q", "--queue", help="only jobs in this queue")
    lst.add_argument("-S", "--scheduler", help="only jobs with this schedulerName")

    view = job.add_parser("view", help="show one job: its tasks, PodGroup, pods and recent history")
    add_name_flags(view, what="job")
    add_output_flags(view, "json", "yaml", "name", "jsonpath", headers=False)
    describe = job.add_parser("describe", help="the same page as view (kubectl describe style)")
    add_name_flags(describe, what="job")
    for verb in ("suspend", "resume", "delete"):
        add_name_flags(job.add_parser(verb, help=f"{verb} a job"), what="job")
    history = job.add_parser("history", help="the job's whole history: job, task, pod and scheduler events")
    add_name_flags(history, what="job")
    history.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    history.add_argument("-o", "--output", choices=["json"])


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    handler = {
        "run": _run,
        "list": _list,
        "view": _view,
        "describe": _view,
        "suspend": _suspend,
        "resume": _resume,
        "delete": _delete,
        "history": _history,
    }[args.verb]
    return await handler(tephra, args)


# -- run ---------------------------------------------------------------------------------------------------
def _prepare_run(args: argparse.Namespace) -> None:
    """Everything local before connecting: the file read and checked, or the job built from the flags."""
    if args.filename:
        docs = read_documents(args.filename)
        for index, doc in enumerate(docs):
            if doc.get("kind") != "Job":
                kind = str(doc.get("kind"))[:64]
                raise CliError(
                    f"{args.filename}: document {index} is a {kind!r}, not a Job (use `vcctl apply`)", code=2
                )
        args.documents = [_in_queue(doc, args.queue) for doc in docs]
        return
    if not args.name:
        raise CliError("job name cannot be left blank: give -N NAME (and -i, -r, -m, -R, -L), or -f FILE", code=2)
    args.documents = [_in_queue(job_from_flags(args), args.queue)]


def _in_queue(doc: dict[str, Any], queue: str | None) -> dict[str, Any]:
    """The Job document submitted to `queue` (--queue), when given."""
    if not queue:
        return doc
    spec = doc.get("spec")
    return {**doc, "spec": {**(spec if isinstance(spec, dict) else {}), "queue": queue}}


DEFAULT_LIMITS = "cpu=1000m,memory=100Mi"  # Volcano's vcctl job run default


def _check_requests_within_limits(requests: dict[str, str], limits: dict[str, str], *, default_limits: bool) -> None:
    """A request above its limit is refused by admission; say so here, naming both flags and the fix."""
    for name, asked in requests.items():
        limit = limits.get(name)
        if limit is not None and parse_quantity(asked) > parse_quantity(limit):
            which = f"-L/--limits {name}={limit}" + (" (the default)" if default_limits else "")
            raise CliError(
                f"-R/--requests {name}={asked} is more than {which}: a request may not exceed its limit; "
                f"give -L too, e.g. -L {name}={asked}",
                code=2,
            )


def job_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The one-task Job Volcano's `vcctl job run -N NAME ...` creates (pkg/cli/job/run.go)."""
    if not 1 <= args.replicas <= MAX_FLAG_REPLICAS:
        raise CliError(f"-r/--replicas must be between 1 and {MAX_FLAG_REPLICAS:,}", code=2)
    if not 0 <= args.min <= args.replicas:
        raise CliError("-m/--min must be between 0 and -r/--replicas", code=2)
    requests = parse_resource_list(args.requests, flag="-R/--requests")
    limits = parse_resource_list(args.limits, flag="-L/--limits")
    _check_requests_within_limits(requests or {}, limits or {}, default_limits=args.limits == DEFAULT_LIMITS)
    resources = {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    container = {"name": args.name, "image": args.image, "imagePullPolicy": "IfNotPresent", "resources": resources}
    metadata: dict[str, Any] = {"name": args.name}
    if args.namespace:
        metadata["namespace"] = args.namespace
    return {
        "apiVersion": BATCH_V1ALPHA1,
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "minAvailable": args.min,
            "schedulerName": args.scheduler,
            "tasks": [
                {
                    "replicas": args.replicas,
                    "template": {
                        "metadata": {"name": args.name, "labels": {"job.volcano.sh": args.name}},
                        "spec": {"restartPolicy": "Never", "containers": [container]},
                    },
                }
            ],
        },
    }


async def _run(tephra: Tephra, args: argparse.Namespace) -> int:
    for doc in args.documents:
        created = await tephra.submit(api.Create, doc, namespace=args.namespace)
        print(f"run job {created.metadata.name} successfully")
    return 0


# -- list --------------------------------------------------------------------------------------------------
def _phase(job: Job) -> str:
    st = job.status
    return (st.state.phase if st and st.state else None) or "Pending"


def job_row(job: Job) -> list[object]:
    """Volcano's `vcctl job list` row (pkg/cli/job/list.go)."""
    st, spec = job.status, job.spec
    replicas = sum(t.replicas or 0 for t in (spec.tasks if spec else None) or [])
    return [
        job.metadata.name,
        date(job.metadata.creation_timestamp),
        _phase(job),
        (job.metadata.labels or {}).get(JOB_TYPE_KEY, "Batch"),
        replicas,
        (st.min_available if st else None) or 0,
        *(
            (getattr(st, f) or 0) if st else 0
            for f in ("pending", "running", "succeeded", "failed", "unknown", "retry_count")
        ),
    ]


JOB_COLUMNS: Columns[Job] = Columns(
    headers=[
        "Name",
        "Creation",
        "Phase",
        "JobType",
        "Replicas",
        "Min",
        "Pending",
        "Running",
        "Succeeded",
        "Failed",
        "Unknown",
        "RetryCount",
    ],
    row=job_row,
    wide_headers=["Queue", "Scheduler"],
    wide_row=lambda j: [(j.spec.queue if j.spec else None) or "", (j.spec.scheduler_name if j.spec else None) or ""],
)


def _keep(args: argparse.Namespace) -> Any:
    def keep(job: Job) -> bool:
        spec = job.spec
        if args.queue and (spec.queue if spec else None) != args.queue:
            return False
        return not (args.scheduler and (spec.scheduler_name if spec else None) != args.scheduler)

    return keep


async def _list(tephra: Tephra, args: argparse.Namespace) -> int:
    view = listing_for(args, JOB_COLUMNS)
    keep = _keep(args)
    if args.watch:
        await listing.watch(tephra.store, Job, view, namespace=namespace_of(args), selector=args.selector, keep=keep)
        return 0
    jobs, _ = await tephra.store.list(Job, namespace_of(args))
    view.print_list(listing.sort_objects(j for j in jobs if keep(j) and args.selector.matches(j.metadata.labels)))
    return 0


# -- view, describe ----------------------------------------------------------------------------------------
async def _get_job(tephra: Tephra, args: argparse.Namespace) -> Job:
    try:
        return await tephra.store.get(Job, args.namespace, args.name)
    except NotFound as exc:
        raise not_found("job", f"{args.namespace}/{args.name}") from exc


async def _view(tephra: Tephra, args: argparse.Namespace) -> int:
    job = await _get_job(tephra, args)
    output = getattr(args, "output", None)
    if output is not None and not output.is_table:
        print_objects([job], output, single=True)
        return 0
    for line in await describe_job(tephra, job):
        print(line)
    return 0


# -- history -----------------------------------------------------------------------------------------------
async def _history(tephra: Tephra, args: argparse.Namespace) -> int:
    import msgspec

    filter_subject = subjects.event_filter("job", args.namespace, args.name)
    async for stored in follow(tephra.nc, filter_subject, stop_when_caught_up=not args.follow):
        e = stored.event
        if args.output == "json":
            print(msgspec.json.encode(e).decode(), flush=True)
            continue
        exit_text = "" if e.exit_code is None else f" exit={e.exit_code}"
        node = f" node={e.node}" if e.node else ""
        phase = f" {e.previous_phase or ''}->{e.phase}" if e.phase else ""
        # The stream sequence of the event's message, and its place in it when it came in a batch.
        where = f"{stored.sequence}.{stored.index}" if stored.index else str(stored.sequence)
        print(
            f"{e.occurred_at} #{where} {e.kind}/{e.name} {e.reason}{phase}{exit_text}{node} {e.message or ''}".rstrip(),
            flush=True,
        )
    return 0


# -- commands ----------------------------------------------------------------------------------------------
async def _command(tephra: Tephra, args: argparse.Namespace, action: Action) -> int:
    job = await _get_job(tephra, args)
    target = OwnerReference(
        api_version=BATCH_V1ALPHA1, kind="Job", name=job.metadata.name or "", uid=job.metadata.uid or ""
    )
    await tephra.submit(api.Create, command_document(action=action.value, namespace=args.namespace, target=target))
    return 0


async def _suspend(tephra: Tephra, args: argparse.Namespace) -> int:
    await _command(tephra, args, Action.ABORT_JOB)
    print(f"suspend job {args.name} successfully")
    return 0


async def _resume(tephra: Tephra, args: argparse.Namespace) -> int:
    await _command(tephra, args, Action.RESUME_JOB)
    print(f"resume job {args.name} successfully")
    return 0


async def _delete(tephra: Tephra, args: argparse.Namespace) -> int:
    await tephra.write(api.Delete(kind="Job", namespace=args.namespace, name=args.name))
    print(f"delete job {args.name} successfully")
    return 0

"""vcctl job run|list|view|suspend|resume|delete|history."""

from __future__ import annotations

import argparse

from vc_bus.events import follow
from vc_cli.client import Tephra
from vc_cli.commands.common import command_document
from vc_cli.documents import read_documents
from vc_cli.errors import CliError
from vc_cli.output import age, date, print_objects, print_table
from vc_core.errors import NotFound
from vc_proto import api, subjects
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.meta import OwnerReference
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import JOB_TYPE_KEY, Action

HISTORY_TAIL = 20


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    job = sub.add_parser("job", help="Volcano jobs").add_subparsers(dest="verb", required=True)
    run = job.add_parser("run", help="create a job from a file")
    run.add_argument("-f", "--filename", required=True)
    run.add_argument("-n", "--namespace")
    lst = job.add_parser("list", help="list jobs")
    lst.add_argument("-n", "--namespace", default="default")
    lst.add_argument("--all-namespaces", "-A", action="store_true")
    lst.add_argument("-q", "--queue")
    lst.add_argument("-o", "--output", choices=["wide", "json", "yaml"])
    view = job.add_parser("view", help="show one job, its tasks and recent history")
    _name_ns(view)
    view.add_argument("-o", "--output", choices=["json", "yaml"])
    for verb in ("suspend", "resume", "delete"):
        _name_ns(job.add_parser(verb, help=f"{verb} a job"))
    history = job.add_parser("history", help="the job's whole history: job, task, pod and scheduler events")
    _name_ns(history)
    history.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    history.add_argument("-o", "--output", choices=["json"])


def _name_ns(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-N", "--name", required=True)
    parser.add_argument("-n", "--namespace", default="default")


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    handler = {"run": _run, "list": _list, "view": _view, "suspend": _suspend, "resume": _resume,
               "delete": _delete, "history": _history}[args.verb]
    return await handler(tephra, args)


async def _run(tephra: Tephra, args: argparse.Namespace) -> int:
    for index, doc in enumerate(read_documents(args.filename)):
        if doc.get("kind") != "Job":
            kind = str(doc.get("kind"))[:64]
            raise CliError(f"{args.filename}: document {index} is a {kind!r}, not a Job (use `vcctl apply`)", code=2)
        created = await tephra.submit("create", doc, namespace=args.namespace)
        print(f"run job {created.metadata.name} successfully")
    return 0


async def _list(tephra: Tephra, args: argparse.Namespace) -> int:
    jobs, _ = await tephra.store.list(Job, None if args.all_namespaces else args.namespace)
    jobs = [j for j in jobs if not args.queue or (j.spec and j.spec.queue == args.queue)]
    jobs.sort(key=lambda j: (j.metadata.namespace or "", j.metadata.name or ""))
    if args.output in ("json", "yaml"):
        print_objects(jobs, args.output, single=False)
        return 0
    headers = ["Name", "Creation", "Phase", "JobType", "Replicas", "Min", "Pending", "Running", "Succeeded", "Failed", "Unknown", "RetryCount"]
    if args.output == "wide":
        headers += ["Queue"]
    rows = [_row(j, wide=args.output == "wide") for j in jobs]
    if args.all_namespaces:
        headers = ["Namespace", *headers]
        rows = [[j.metadata.namespace, *row] for j, row in zip(jobs, rows, strict=True)]
    print_table(headers, rows)
    return 0


def _row(job: Job, *, wide: bool) -> list[object]:
    st, spec = job.status, job.spec
    replicas = sum(t.replicas or 0 for t in (spec.tasks if spec else None) or [])
    row: list[object] = [
        job.metadata.name, date(job.metadata.creation_timestamp),
        (st.state.phase if st and st.state else None) or "Pending",
        (job.metadata.labels or {}).get(JOB_TYPE_KEY, "Batch"), replicas,
        (st.min_available if st else None) or 0,
        *((getattr(st, f) or 0) if st else 0 for f in ("pending", "running", "succeeded", "failed", "unknown", "retry_count")),
    ]
    if wide:
        row.append(spec.queue if spec else "")
    return row


async def _get_job(tephra: Tephra, args: argparse.Namespace) -> Job:
    try:
        return await tephra.store.get(Job, args.namespace, args.name)
    except NotFound as exc:
        raise CliError(f"job {args.namespace}/{args.name} not found") from exc


async def _view(tephra: Tephra, args: argparse.Namespace) -> int:
    job = await _get_job(tephra, args)
    if args.output:
        print_objects([job], args.output, single=True)
        return 0
    _describe(job)
    await _describe_podgroup(tephra, job)
    if not tephra.has_nats:  # `--backend kube` without NATS credentials: the apiserver has no history
        return 0
    events = [e async for e in follow(tephra.nc, subjects.event_filter("job", args.namespace, args.name), stop_when_caught_up=True)]
    print("History (most recent last):")
    _print_history([e.event for e in events[-HISTORY_TAIL:]])
    return 0


def _describe(job: Job) -> None:
    spec, st = job.spec, job.status
    phase = (st.state.phase if st and st.state else None) or "Pending"
    print(f"Name:          {job.metadata.name}\nNamespace:     {job.metadata.namespace}")
    print(f"Queue:         {spec.queue if spec else ''}\nPhase:         {phase}")
    print(f"Created:       {job.metadata.creation_timestamp} ({age(job.metadata.creation_timestamp)} ago)")
    print(f"MinAvailable:  {(st.min_available if st else None) or (spec.min_available if spec else 0)}")
    print(f"RetryCount:    {(st.retry_count if st else None) or 0} / {(spec.max_retry if spec else None) or 3}")
    print(f"Version:       {(st.version if st else None) or 0}\nTasks:")
    counts = (st.task_status_count if st else None) or {}
    rows = []
    for task in (spec.tasks if spec else None) or []:
        phases = (counts.get(task.name or "") and counts[task.name or ""].phase) or {}
        rows.append([task.name, task.replicas or 0, task.min_available if task.min_available is not None else task.replicas or 0,
                     *(phases.get(p, 0) for p in ("Pending", "Running", "Succeeded", "Failed", "Unknown"))])
    print_table(["  Task", "Replicas", "Min", "Pending", "Running", "Succeeded", "Failed", "Unknown"], rows)
    for cond in (st.conditions if st else None) or []:
        print(f"Condition:     {cond.status} at {cond.last_transition_time}" + (f" ({cond.reason}: {cond.message})" if cond.reason else ""))


async def _describe_podgroup(tephra: Tephra, job: Job) -> None:
    groups, _ = await tephra.store.list(PodGroup, job.metadata.namespace)
    for pg in groups:
        owners = pg.metadata.owner_references or []
        if not any(o.kind == "Job" and o.uid == job.metadata.uid for o in owners):
            continue
        phase = pg.status.phase if pg.status else "Pending"
        print(f"PodGroup:      {pg.metadata.name} ({phase})")
        conditions = sorted((pg.status.conditions if pg.status else None) or [], key=lambda c: c.last_transition_time or "")
        for cond in conditions:  # oldest first: the last line is the scheduler's latest verdict
            if cond.status == "True":
                when = f" (since {cond.last_transition_time})" if cond.last_transition_time else ""
                print(f"  {cond.type}{when}: {cond.reason}" + (f": {cond.message}" if cond.message else ""))


def _print_history(events: list) -> None:  # type: ignore[type-arg]
    rows = [[e.occurred_at, e.kind, e.task or "", e.name, e.reason, e.phase or "", "" if e.exit_code is None else e.exit_code,
             e.node or "", e.message or ""] for e in events]
    print_table(["  Time", "Kind", "Task", "Name", "Reason", "Phase", "Exit", "Node", "Message"], rows)


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
        print(f"{e.occurred_at} #{where} {e.kind}/{e.name} {e.reason}{phase}{exit_text}{node} {e.message or ''}".rstrip(), flush=True)
    return 0


async def _command(tephra: Tephra, args: argparse.Namespace, action: Action) -> int:
    job = await _get_job(tephra, args)
    target = OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name=job.metadata.name or "", uid=job.metadata.uid or "")
    await tephra.submit("create", command_document(action=action.value, namespace=args.namespace, target=target))
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
    await tephra.write(api.WriteRequest(operation="delete", kind="Job", namespace=args.namespace, name=args.name))
    print(f"delete job {args.name} successfully")
    return 0



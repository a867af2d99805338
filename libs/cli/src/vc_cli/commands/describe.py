"""vcctl describe job|queue|podgroup|node NAME [-n NS]: kubectl's spelling of `job view`, `node describe`
and friends.

This module gathers what a describe page shows (the object, its PodGroup, pods, jobs) and its events;
vc_cli.describe lays the page out.

Events: the object's recent history from the VC_EVT stream (`history_source`) and its Kubernetes
Events (vc_cli.kube_events_source: the store's Event kind, or the apiserver's core/v1 Events), merged
by time; a history line that a Kubernetes Event already says is left out.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Final

from vc_bus.events import follow
from vc_cli import describe as page
from vc_cli.client import Tephra
from vc_cli.commands import node
from vc_cli.describe import DescribedEvent
from vc_cli.errors import not_found
from vc_cli.kube_events_source import kube_events_source, without_history_repeats
from vc_core.errors import NotFound
from vc_proto import subjects
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION, JOB_NAME_KEY

Described = Job | Queue | PodGroup
# An event source: the events about one object, oldest first, or None when it cannot tell (and why).
EventSource = Callable[[Tephra, Described], Awaitable[list[DescribedEvent] | str]]

KIND_NAMES: Final = {
    "job": "job",
    "jobs": "job",
    "vcjob": "job",
    "vcjobs": "job",
    "vj": "job",
    "queue": "queue",
    "queues": "queue",
    "q": "queue",
    "podgroup": "podgroup",
    "podgroups": "podgroup",
    "pg": "podgroup",
    "node": "node",
    "nodes": "node",
    "no": "node",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("describe", help="describe a job, queue, podgroup or node (kubectl style)")
    parser.add_argument(
        "kind", choices=sorted(KIND_NAMES), metavar="KIND", help="job, queue, podgroup or node (or vcjob, q, pg, no)"
    )
    parser.add_argument("name", help="the object's name")
    parser.add_argument("-n", "--namespace", default="default", help="the namespace (job, podgroup; default: default)")


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    kind = KIND_NAMES[args.kind]
    if kind == "node":  # the same page as `vcctl node describe NAME`
        return await node.describe(tephra, args.name)
    if kind == "job":
        try:
            job = await tephra.store.get(Job, args.namespace, args.name)
        except NotFound as exc:
            raise not_found("job", f"{args.namespace}/{args.name}") from exc
        lines = await describe_job(tephra, job)
    elif kind == "queue":
        lines = await describe_queue(tephra, await get_queue(tephra, args.name))
    else:
        lines = await describe_podgroup(tephra, await get_podgroup(tephra, args.namespace, args.name))
    for line in lines:
        print(line)
    return 0


async def get_queue(tephra: Tephra, name: str) -> Queue:
    try:
        return await tephra.store.get(Queue, None, name)
    except NotFound as exc:
        raise not_found("queue", name) from exc


async def get_podgroup(tephra: Tephra, namespace: str, name: str) -> PodGroup:
    try:
        return await tephra.store.get(PodGroup, namespace, name)
    except NotFound as exc:
        raise not_found("podgroup", f"{namespace}/{name}") from exc


# -- the pages -------------------------------------------------------------------------------------------
async def describe_job(tephra: Tephra, job: Job) -> list[str]:
    namespace, uid = job.metadata.namespace, job.metadata.uid
    groups, _ = await tephra.store.list(PodGroup, namespace)
    podgroup = next(
        (pg for pg in groups if any(o.kind == "Job" and o.uid == uid for o in pg.metadata.owner_references or [])), None
    )
    pods, _ = await tephra.store.list(Pod, namespace)
    mine = [p for p in pods if (p.metadata.labels or {}).get(JOB_NAME_KEY) == job.metadata.name]
    events, note = await gather_events(tephra, job)
    return page.describe_job(job, podgroup=podgroup, pods=mine, events=events, events_note=note)


async def describe_queue(tephra: Tephra, queue: Queue) -> list[str]:
    name = queue.metadata.name
    groups, _ = await tephra.store.list(PodGroup)
    jobs, _ = await tephra.store.list(Job)
    events, note = await gather_events(tephra, queue)
    return page.describe_queue(
        queue,
        podgroups=[pg for pg in groups if ((pg.spec.queue if pg.spec else None) or "default") == name],
        jobs=[j for j in jobs if ((j.spec.queue if j.spec else None) or "default") == name],
        events=events,
        events_note=note,
    )


async def describe_podgroup(tephra: Tephra, pg: PodGroup) -> list[str]:
    pods, _ = await tephra.store.list(Pod, pg.metadata.namespace)
    mine = [p for p in pods if (p.metadata.annotations or {}).get(GROUP_NAME_ANNOTATION) == pg.metadata.name]
    events, note = await gather_events(tephra, pg)
    return page.describe_podgroup(pg, pods=mine, events=events, events_note=note)


# -- events ----------------------------------------------------------------------------------------------
async def history_source(tephra: Tephra, obj: Described) -> list[DescribedEvent] | str:
    """The object's history on VC_EVT: a job's whole history (its tasks, pods and PodGroup too), a
    queue's, a PodGroup's (from its job's history when a job owns it)."""
    if not tephra.has_nats:
        return "the history needs Tephra's NATS: give --server and --creds"
    meta = obj.metadata
    name = meta.name or ""
    about = (type(obj).__name__, name)
    if isinstance(obj, Job):
        subject = subjects.event_filter("job", meta.namespace, name)
    elif isinstance(obj, Queue):
        subject = subjects.event_subject("queue", None, name)
    else:
        owner = next((o for o in meta.owner_references or [] if o.kind == "Job"), None)
        subject = (
            subjects.event_filter("job", meta.namespace, owner.name)
            if owner
            else subjects.event_filter("podgroup", meta.namespace, name)
        )
    found = [s.event async for s in follow(tephra.nc, subject, stop_when_caught_up=True)]
    if isinstance(obj, PodGroup):
        found = [e for e in found if e.kind == "PodGroup" and e.name == name]
    return page.history_events(found, about=about)


EVENT_SOURCES: list[EventSource] = [history_source, kube_events_source]


async def gather_events(tephra: Tephra, obj: Described) -> tuple[list[DescribedEvent], str | None]:
    """Every source's events about `obj`, oldest first, and a note when some source could not answer."""
    events: list[DescribedEvent] = []
    notes: list[str] = []
    kube: list[DescribedEvent] = []
    for source in EVENT_SOURCES:
        found = await source(tephra, obj)
        if isinstance(found, str):
            notes.append(found)
        else:
            events.extend(found)
            kube.extend(found if source is kube_events_source else [])
    events = without_history_repeats(events, kube)  # a fact that is a Kubernetes Event is shown once
    events.sort(key=lambda e: e.last_seen)
    return events, "; ".join(notes) or None

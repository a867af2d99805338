"""What each page shows, from the cache: plain dicts for the templates (sync, no I/O).

Every list is one bounded page (logic.paging); the overview shows the first rows of each and links on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from vc_dashboard.cache import ClusterCache
from vc_dashboard.history import HistoryTail
from vc_dashboard.logic.hierarchy import subtree_counts
from vc_dashboard.logic.jobs import FINISHED, job_phase, job_row, phase_counts, select_jobs
from vc_dashboard.logic.node_detail import node_pods
from vc_dashboard.logic.nodes import cluster_allocatable, cluster_totals, node_row
from vc_dashboard.logic.paging import paginate
from vc_dashboard.logic.query import ListQuery
from vc_dashboard.logic.queue_detail import queue_detail
from vc_dashboard.logic.quota import queue_order, queue_row
from vc_dashboard.logic.timeline import build_timeline
from vc_dashboard.logic.verdict import latest_unschedulable
from vc_dashboard.logic.yaml_view import CLUSTER_SCOPED, object_yaml
from vc_runtime.informer import Informer

OVERVIEW_ROWS: Final = 8
JOB_PODS_SHOWN: Final = 100
HISTORY_ROWS: Final = 200
FILTER_OPTIONS: Final = 200
QUEUE_JOBS_SHOWN: Final = 200
NODE_PODS_SHOWN: Final = 500  # Kubernetes' default is 110 pods per node; a larger node is cut, and says so

Context = dict[str, Any]
Readable = Callable[[str | None], bool]  # the namespaces the viewer may see (logic.access.Viewer.reads)


def queues_page(cache: ClusterCache, query: ListQuery) -> Context:
    queues = sorted(cache.queues.items.values(), key=queue_order)
    page = paginate(queues, number=query.page, size=query.size)
    cluster = cluster_allocatable(cache.nodes.items.values())
    counts = subtree_counts(queues)  # a parent's row counts its children's PodGroups, as its allocation does
    rows = [queue_row(q, cluster, counts.get(q.metadata.name or "")) for q in page.items]
    return {"queues": rows, "page": page, "query": query}


def jobs_page(cache: ClusterCache, query: ListQuery, readable: Readable) -> Context:
    everything = [j for j in cache.jobs.items.values() if readable(j.metadata.namespace)]
    chosen = select_jobs(everything, query.jobs)
    page = paginate(chosen, number=query.page, size=query.size)
    rows = [job_row(j, cache.podgroup_of(j.metadata.namespace or "", j.metadata.name or "")) for j in page.items]
    return {
        "jobs": rows,
        "page": page,
        "query": query,
        "options": {
            "namespace": _bounded(sorted({j.metadata.namespace or "" for j in everything})),
            "queue": _bounded(sorted({q.metadata.name or "" for q in cache.queues.items.values()})),
            "phase": _bounded(sorted({job_phase(j) for j in everything} | {query.jobs.phase} - {""})),
        },
    }


def nodes_page(cache: ClusterCache, query: ListQuery) -> Context:
    nodes = sorted(cache.nodes.items.values(), key=lambda n: n.metadata.name or "")
    every = [node_row(n, cache.usage.of(n.metadata.name or "")) for n in nodes]
    page = paginate(every, number=query.page, size=query.size)
    return {
        "nodes": page.items,
        "page": page,
        "query": query,
        "totals": cluster_totals(every),
        "ready": sum(1 for row in every if row.ready),
    }


def overview_page(cache: ClusterCache, readable: Readable) -> Context:
    first = ListQuery(size=OVERVIEW_ROWS)
    queues, jobs, nodes = queues_page(cache, first), jobs_page(cache, first, readable), nodes_page(cache, first)
    return {
        "queues": queues["queues"],
        "queue_page": queues["page"],
        "jobs": jobs["jobs"],
        "job_page": jobs["page"],
        "phases": phase_counts(j for j in cache.jobs.items.values() if readable(j.metadata.namespace)),
        "node_page": nodes["page"],
        "ready_nodes": nodes["ready"],
        "totals": nodes["totals"],
        "query": first,
    }


def job_page(cache: ClusterCache, namespace: str, name: str, tail: HistoryTail, *, now: datetime) -> Context | None:
    """None when there is neither the job nor any history of it."""
    job = cache.jobs.get(namespace, name)
    if job is None and not tail.events:
        return None
    group = cache.podgroup_of(namespace, name)
    phase = job_phase(job) if job is not None else ""
    events = [stored.event for stored in tail.events]
    pods = cache.pods_of(namespace, name)
    return {
        "namespace": namespace,
        "name": name,
        "job": job_row(job, group) if job is not None else None,
        "group": group,
        "group_verdict": latest_unschedulable(group),
        "pods": pods[:JOB_PODS_SHOWN],
        "pod_total": len(pods),
        "timeline": build_timeline(events, now=None if (job is None or phase in FINISHED) else now),
        "history": list(tail.events)[-HISTORY_ROWS:],
        "history_total": tail.total,
        "history_total_exact": tail.exact,
        "history_complete": tail.complete,
        "history_sequence": tail.last_sequence,
    }


def _bounded(values: list[str]) -> list[str]:
    return values[:FILTER_OPTIONS]


def queue_page(cache: ClusterCache, name: str) -> Context | None:
    """One queue: its hierarchy and limits, its quota bars and its jobs (newest first); None when unknown."""
    queue = cache.queues.get(None, name)
    if queue is None:
        return None
    queues = list(cache.queues.items.values())
    jobs = select_jobs(cache.jobs.items.values(), ListQuery().jobs)
    mine = [j for j in jobs if ((j.spec.queue if j.spec else None) or "default") == name]
    rows = [job_row(j, cache.podgroup_of(j.metadata.namespace or "", j.metadata.name or "")) for j in mine]
    cluster = cluster_allocatable(cache.nodes.items.values())
    return {
        "queue": queue_detail(queue, queues),
        "bars": queue_row(queue, cluster).bars,
        "jobs": rows[:QUEUE_JOBS_SHOWN],
        "job_total": len(rows),
    }


def node_page(cache: ClusterCache, name: str) -> Context | None:
    """One node: its allocation and the pods on it with their jobs; None when unknown."""
    node = cache.nodes.get(None, name)
    if node is None:
        return None
    keys = cache.usage.pods_on(name)
    pods = [pod for namespace, pod_name in keys[:NODE_PODS_SHOWN] if (pod := cache.pods.get(namespace, pod_name))]
    return {"node": node_row(node, cache.usage.of(name)), "pods": node_pods(pods), "pod_total": len(keys)}


def yaml_page(cache: ClusterCache, kind: str, namespace: str | None, name: str) -> Context | None:
    """The object's YAML, read-only; None when the dashboard does not hold it."""
    informers: dict[str, Informer[Any]] = {
        "job": cache.jobs,
        "podgroup": cache.podgroups,
        "pod": cache.pods,
        "queue": cache.queues,
        "node": cache.nodes,
    }
    informer = informers.get(kind)
    found = informer.get(None if kind in CLUSTER_SCOPED else namespace, name) if informer is not None else None
    if found is None:
        return None
    return {"kind": kind, "namespace": namespace, "name": name, "yaml": object_yaml(found)}

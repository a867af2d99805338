"""Every page stays small however large the cluster: 100,000 pods of one job, 5,000 jobs, 2,000 nodes
and a job with a 2,000-event history render pages of bounded size (the lists are pages, the timeline
draws a bounded number of lanes, the history table a bounded number of rows)."""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime

import msgspec

from tests.unit.dashboard.dashboard_builders import event, job, node, pod, queue
from vc_bus.events import StoredEvent
from vc_bus.testing import MemoryStore
from vc_dashboard import pages
from vc_dashboard.cache import ClusterCache
from vc_dashboard.history import HistoryTail
from vc_dashboard.logic.access import Viewer
from vc_dashboard.logic.query import ListQuery
from vc_dashboard.logic.timeline import MAX_POD_LANES
from vc_dashboard.render.html import render

PODS = 100_000
JOBS = 5_000
NODES = 2_000
MAX_PAGE_BYTES = 600_000

ADMIN_VIEW = Viewer("admin", None)


def big_cache() -> ClusterCache:
    cache = ClusterCache(MemoryStore(), publish=lambda topics: None)
    for i in range(NODES):
        cache.nodes.remember(node(f"node-{i:05d}"))
    for i in range(JOBS):
        cache.jobs.remember(
            job(f"job-{i:05d}", created=f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z")
        )
    cache.jobs.remember(job("huge", tasks={"w": PODS}, phase="Running", counts={"w": {"Running": PODS}}))
    template = pod("huge-w", node="node-00000", phase="Running", requests={"cpu": "100m"}, job_name="huge")
    for i in range(PODS):
        meta = msgspec.structs.replace(template.metadata, name=f"huge-w-{i:06d}")
        spec = msgspec.structs.replace(template.spec, node_name=f"node-{i % NODES:05d}")  # type: ignore[arg-type]
        cache.pods.remember(msgspec.structs.replace(template, metadata=meta, spec=spec))
    for i in range(50):
        cache.queues.remember(queue(f"q-{i:03d}", status={"allocated": {"cpu": str(i)}}))
    return cache


def history(count: int) -> HistoryTail:
    tail = HistoryTail(keep=2_000)
    tail.events = deque(maxlen=2_000)
    for i in range(count):
        seconds = i % 60
        stored = StoredEvent(
            i + 1,
            event("Pod", f"huge-w-{i:06d}", "PodBound", f"2026-01-01T00:00:{seconds:02d}Z", task="w", job_name="huge"),
        )
        tail.add(stored)
    return tail


def page_bytes(template: str, context: pages.Context) -> int:
    html = render("layout.html", title="t", section="", stream="/stream/x", fragment=template, synced=True, **context)
    return len(html.encode())


def test_every_page_of_a_large_cluster_is_bounded() -> None:
    cache = big_cache()
    assert len(cache.pods.items) == PODS and cache.pod_count_of("default", "huge") == PODS
    assert cache.usage.of("node-00000")["pods"] == PODS // NODES  # allocation kept per change, not summed per view
    query = ListQuery()
    for template, context in (
        ("overview.html", pages.overview_page(cache, ADMIN_VIEW.reads)),
        ("queues.html", pages.queues_page(cache, query)),
        ("jobs.html", pages.jobs_page(cache, query, ADMIN_VIEW.reads)),
        ("nodes.html", pages.nodes_page(cache, query)),
    ):
        assert page_bytes(template, context) < MAX_PAGE_BYTES, template
    jobs = pages.jobs_page(cache, ListQuery(page=2, size=500), ADMIN_VIEW.reads)
    assert len(jobs["jobs"]) == 500 and jobs["page"].note == "showing 501-1,000 of 5,001"

    tail = history(5_000)
    context = pages.job_page(cache, "default", "huge", tail, now=datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    assert context is not None
    assert len(tail.events) == 2_000 and tail.total == 5_000
    assert len(context["pods"]) == pages.JOB_PODS_SHOWN and context["pod_total"] == PODS
    assert len(context["history"]) == pages.HISTORY_ROWS
    assert sum(lane.kind == "Pod" for lane in context["timeline"].lanes) == MAX_POD_LANES
    assert page_bytes("job.html", context) < MAX_PAGE_BYTES


def test_a_crowded_node_page_is_cut_and_says_so() -> None:
    cache = ClusterCache(MemoryStore(), publish=lambda topics: None)
    cache.nodes.remember(node("node-0", pods="5000"))
    crowd = pages.NODE_PODS_SHOWN + 100
    for i in range(crowd):
        cache.pods.remember(pod(f"p-{i:05d}", node="node-0", phase="Running", requests={"cpu": "10m"}, job_name="j"))
    context = pages.node_page(cache, "node-0")
    assert context is not None
    assert len(context["pods"]) == pages.NODE_PODS_SHOWN and context["pod_total"] == crowd
    html = render("layout.html", title="t", section="", stream="", fragment="node.html", synced=True, **context)
    assert f"{pages.NODE_PODS_SHOWN} of {crowd} shown" in html and len(html.encode()) < MAX_PAGE_BYTES

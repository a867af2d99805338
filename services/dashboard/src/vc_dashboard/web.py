"""The HTTP shell: pages rendered on the server, and one live stream (server-sent events) per page.

A page's stream is its path under /stream with the same query: it pushes the page's new content each
time a watch reports a change the page shows (at most one update per MIN_INTERVAL_S), and a keep-alive
comment when nothing changes. Security headers on every response: a strict Content-Security-Policy
(scripts, styles and images from this service only; no inline code), nosniff, no framing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import structlog
from aiohttp import web
from nats.aio.client import Client

from vc_dashboard import pages
from vc_dashboard.cache import ClusterCache
from vc_dashboard.history import HistoryTail, follow_after, read_tail
from vc_dashboard.hub import Hub, Subscription, TooManyStreams, Wake, job_topic
from vc_dashboard.logic.access import Viewer
from vc_dashboard.logic.query import BadQuery, ListQuery, check_name, parse_list_query
from vc_dashboard.logic.yaml_view import YAML_KINDS
from vc_dashboard.login import VIEWER, Gate
from vc_dashboard.metrics import PAGES, UPDATES
from vc_dashboard.render.html import render
from vc_dashboard.sse import KEEP_ALIVE, encode_event

log = structlog.get_logger(__name__)

STATIC: Final = Path(__file__).parent / "static"
MIN_INTERVAL_S: Final = 0.5
KEEP_ALIVE_S: Final = 15.0
HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
Render = Callable[[], str]


@dataclass(frozen=True, slots=True)
class ListView:
    name: str
    title: str
    template: str
    topics: frozenset[str]
    build: Callable[[ClusterCache, ListQuery, Viewer], pages.Context]


VIEWS: Final = {
    "/": ListView(
        "overview",
        "Overview",
        "overview.html",
        frozenset({"Queue", "Job", "PodGroup", "Node", "Pod"}),
        lambda cache, _, viewer: pages.overview_page(cache, viewer.reads),
    ),
    "/queues": ListView(
        "queues", "Queues", "queues.html", frozenset({"Queue"}), lambda cache, q, _: pages.queues_page(cache, q)
    ),
    "/jobs": ListView(
        "jobs",
        "Jobs",
        "jobs.html",
        frozenset({"Job", "PodGroup", "Queue"}),
        lambda cache, q, viewer: pages.jobs_page(cache, q, viewer.reads),
    ),
    "/nodes": ListView(
        "nodes", "Nodes", "nodes.html", frozenset({"Node", "Pod"}), lambda cache, q, _: pages.nodes_page(cache, q)
    ),
}


def now_utc() -> datetime:
    return datetime.now(UTC)


class Dashboard:
    def __init__(self, *, cache: ClusterCache, hub: Hub, nc: Client, gate: Gate) -> None:
        self._cache = cache
        self._hub = hub
        self._nc = nc
        self._gate = gate

    def application(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024)
        app.on_response_prepare.append(_security_headers)
        self._gate.routes(app)  # the Host check and the login, before every page
        for path, view in VIEWS.items():
            app.router.add_get(path, self._list_page(view))
            app.router.add_get("/stream" + path, self._list_stream(view))
        app.router.add_get("/jobs/{namespace}/{name}", self._job_page)
        app.router.add_get("/stream/jobs/{namespace}/{name}", self._job_stream)
        app.router.add_get("/queues/{name}", self._queue_page)
        app.router.add_get("/nodes/{name}", self._node_page)
        app.router.add_get("/stream/nodes/{name}", self._node_stream)
        app.router.add_get("/yaml/{kind}/{name}", self._yaml_page)
        app.router.add_get("/yaml/{kind}/{namespace}/{name}", self._yaml_page)
        app.router.add_static("/static", STATIC, show_index=False, follow_symlinks=False)
        return app

    # -- pages ---------------------------------------------------------------------------------------
    def _list_page(self, view: ListView) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            try:
                query = parse_list_query(request.query)
            except BadQuery as exc:
                return self._error(view.name, 400, str(exc))
            context = view.build(self._cache, query, request[VIEWER])
            return self._page(view.name, view.title, view.template, _stream_url(request), context)

        return handle

    async def _job_page(self, request: web.Request) -> web.Response:
        try:
            namespace, name = _job_key(request)
        except BadQuery as exc:
            return self._error("job", 400, str(exc))
        if not request[VIEWER].reads(namespace):
            return self._error("job", 403, f"{request[VIEWER].identity} may not read namespace {namespace}")
        tail = await read_tail(self._nc, namespace, name)
        context = pages.job_page(self._cache, namespace, name, tail, now=now_utc())
        if context is None:
            return self._error("job", 404, f"no job {namespace}/{name}, and no history of one")
        return self._page("job", f"Job {namespace}/{name}", "job.html", _stream_url(request), context, section="/jobs")

    async def _queue_page(self, request: web.Request) -> web.Response:
        """One queue (a page without a live stream: it reads as it was when asked)."""
        try:
            name = check_name("name", request.match_info["name"])
        except BadQuery as exc:
            return self._error("queue", 400, str(exc))
        context = pages.queue_page(self._cache, name)
        if context is None:
            return self._error("queue", 404, f"no queue {name}")
        return self._page("queue", f"Queue {name}", "queue.html", "", context, section="/queues")

    async def _node_page(self, request: web.Request) -> web.Response:
        """One node and the pods on it, live: its stream wakes on node and pod changes, as the nodes list."""
        try:
            name = check_name("name", request.match_info["name"])
        except BadQuery as exc:
            return self._error("node", 400, str(exc))
        context = pages.node_page(self._cache, name)
        if context is None:
            return self._error("node", 404, f"no node {name}")
        return self._page("node", f"Node {name}", "node.html", _stream_url(request), context, section="/nodes")

    async def _yaml_page(self, request: web.Request) -> web.Response:
        """One object's YAML, read-only."""
        kind = request.match_info["kind"]
        try:
            name = check_name("name", request.match_info["name"])
            namespace = check_name("namespace", request.match_info.get("namespace", "default"))
        except BadQuery as exc:
            return self._error("yaml", 400, str(exc))
        if kind not in YAML_KINDS:
            return self._error("yaml", 404, f"no YAML view of {kind!r}: one of {', '.join(YAML_KINDS)}")
        context = pages.yaml_page(self._cache, kind, namespace, name)
        if context is None:
            return self._error("yaml", 404, f"no {kind} {name}")
        return self._page("yaml", f"{kind} {name} (YAML)", "yaml.html", "", context)

    def _page(
        self, view: str, title: str, template: str, stream: str, context: pages.Context, *, section: str = ""
    ) -> web.Response:
        html = render(
            "layout.html",
            title=title,
            section=section or next((p for p, v in VIEWS.items() if v.name == view), ""),
            stream=stream,
            fragment=template,
            synced=self._cache.synced(),
            **context,
        )
        PAGES.labels(view, "200").inc()
        return web.Response(text=html, content_type="text/html")

    def _error(self, view: str, status: int, message: str) -> web.Response:
        PAGES.labels(view, str(status)).inc()
        html = render(
            "layout.html",
            title=str(status),
            section="",
            stream="",
            fragment="error.html",
            synced=True,
            status=status,
            message=message,
        )
        return web.Response(status=status, text=html, content_type="text/html")

    # -- live streams --------------------------------------------------------------------------------
    def _list_stream(self, view: ListView) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            try:
                query = parse_list_query(request.query)
            except BadQuery as exc:
                return web.Response(status=400, text=str(exc))

            viewer = request[VIEWER]

            def fragment() -> str:
                return self._fragment(view.template, view.build(self._cache, query, viewer))

            try:
                with self._hub.subscribe(view.topics) as subscription:
                    return await self._pump(request, view.name, subscription, fragment)
            except TooManyStreams as exc:
                return web.Response(status=503, text=str(exc), headers={"Retry-After": "5"})

        return handle

    async def _node_stream(self, request: web.Request) -> web.StreamResponse:
        try:
            name = check_name("name", request.match_info["name"])
        except BadQuery as exc:
            return web.Response(status=400, text=str(exc))

        def fragment() -> str:
            context = pages.node_page(self._cache, name)
            if context is None:
                return self._fragment("error.html", {"status": 404, "message": f"no node {name}"})
            return self._fragment("node.html", context)

        try:
            with self._hub.subscribe(VIEWS["/nodes"].topics) as subscription:
                return await self._pump(request, "node", subscription, fragment)
        except TooManyStreams as exc:
            return web.Response(status=503, text=str(exc), headers={"Retry-After": "5"})

    async def _job_stream(self, request: web.Request) -> web.StreamResponse:
        try:
            namespace, name = _job_key(request)
        except BadQuery as exc:
            return web.Response(status=400, text=str(exc))
        if not request[VIEWER].reads(namespace):
            return web.Response(status=403, text=f"{request[VIEWER].identity} may not read namespace {namespace}")
        tail = await read_tail(self._nc, namespace, name)

        def fragment() -> str:
            context = pages.job_page(self._cache, namespace, name, tail, now=now_utc())
            if context is None:
                return self._fragment("error.html", {"status": 404, "message": f"no job {namespace}/{name}"})
            return self._fragment("job.html", context)

        try:
            with self._hub.subscribe({job_topic(namespace, name)}) as subscription:
                async with asyncio.TaskGroup() as tg:
                    follower = tg.create_task(
                        self._follow(namespace, name, tail, subscription), name=f"history:{namespace}/{name}"
                    )
                    try:
                        return await self._pump(request, "job", subscription, fragment)
                    finally:
                        follower.cancel()
        except TooManyStreams as exc:
            return web.Response(status=503, text=str(exc), headers={"Retry-After": "5"})

    async def _follow(self, namespace: str, name: str, tail: HistoryTail, subscription: Subscription) -> None:
        async for stored in follow_after(self._nc, namespace, name, after=tail.last_sequence):
            tail.add(stored)
            subscription.notify()

    async def _pump(
        self, request: web.Request, view: str, subscription: Subscription, fragment: Render
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        try:
            # The first update at once: the page may have changed between its render and this stream.
            await response.write(encode_event("update", fragment()))
            while True:
                wake = await subscription.wait(KEEP_ALIVE_S)
                if wake is Wake.CLOSED:
                    break
                if wake is Wake.IDLE:
                    await response.write(KEEP_ALIVE)
                    continue
                await response.write(encode_event("update", fragment()))
                UPDATES.labels(view).inc()
                if await subscription.pause(MIN_INTERVAL_S):
                    break
        except ConnectionResetError:
            log.debug("stream.client_gone", view=view)
        return response

    def _fragment(self, template: str, context: pages.Context) -> str:
        return render("live.html", fragment=template, synced=self._cache.synced(), **context)


def _job_key(request: web.Request) -> tuple[str, str]:
    return (
        check_name("namespace", request.match_info["namespace"]),
        check_name("name", request.match_info["name"]),
    )


def _stream_url(request: web.Request) -> str:
    """The page's stream: the same path and (still encoded) query under /stream."""
    return "/stream" + request.rel_url.raw_path_qs


async def _security_headers(_: web.Request, response: web.StreamResponse) -> None:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)

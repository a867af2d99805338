"""Liveness, readiness and metrics over HTTP: /livez, /readyz, /metrics (aiohttp, one supervised task)."""

from __future__ import annotations

import asyncio
import contextlib
import json

import structlog
from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry, Gauge
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from vc_runtime.bare_counter import exposition

log = structlog.get_logger(__name__)
# Read at each scrape: a process whose task count keeps climbing under steady load leaks tasks (the soak,
# benchmarks/soak.py, samples it).
ASYNCIO_TASKS = Gauge("tephra_asyncio_tasks", "asyncio tasks alive in this process when /metrics was read")


class Probes:
    """Readiness is a set of named conditions; all must hold, and the service must not be stopping."""

    def __init__(self) -> None:
        self._conditions: dict[str, bool] = {}
        self._stopping = False
        self._started = asyncio.Event()
        self._changed = asyncio.Event()  # set whenever a condition or the stopping flag changes
        self.port: int | None = None

    def require(self, *names: str) -> None:
        for name in names:
            self._conditions.setdefault(name, False)

    def set(self, name: str, value: bool = True) -> None:
        self._conditions[name] = value
        self._changed.set()

    def mark_not_ready(self) -> None:
        self._stopping = True
        self._changed.set()

    def unmet(self) -> list[str]:
        unmet = [name for name, ok in sorted(self._conditions.items()) if not ok]
        return (["shutting-down"] if self._stopping else []) + unmet

    @property
    def ready(self) -> bool:
        return not self.unmet()

    async def wait_ready(self) -> None:
        while not self.ready:
            self._changed.clear()
            await self._changed.wait()


async def serve_probes(
    probes: Probes,
    *,
    host: str,
    port: int,
    registry: CollectorRegistry = REGISTRY,
    started: asyncio.Event | None = None,
) -> None:
    """Serve until cancelled. /livez does no I/O; /readyz lists unmet conditions."""

    async def livez(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        unmet = probes.unmet()
        if unmet:
            return web.Response(status=503, text=json.dumps({"unmet": unmet}), content_type="application/json")
        return web.Response(text="ok")

    async def metrics(_: web.Request) -> web.Response:
        ASYNCIO_TASKS.set(len(asyncio.all_tasks()))
        return web.Response(body=exposition(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        probes.port = sockets[0].getsockname()[1] if sockets else port
        log.info("probes.listening", host=host, port=probes.port)
        if started is not None:
            started.set()
        await asyncio.Event().wait()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(runner.cleanup())

"""Wiring of the dashboard: the cache (informers over the read-only store), the hub, the HTTP site."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
from collections.abc import Sequence
from typing import Final

import msgspec
import structlog
from aiohttp import web

from vc_core.errors import ConfigError
from vc_dashboard.cache import ClusterCache
from vc_dashboard.hub import Hub
from vc_dashboard.logic.access import allowed_hosts
from vc_dashboard.login import Gate, People
from vc_dashboard.readonly import ReadOnlyStore
from vc_dashboard.web import Dashboard
from vc_runtime.probes import Probes
from vc_runtime.resync import wait_synced
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_security.nkey import is_user_public_key

log = structlog.get_logger(__name__)

DEFAULT_PORT: Final = 8090
# aiohttp waits this long at shutdown for open handlers; live streams end as soon as the hub closes.
SHUTDOWN_TIMEOUT_S: Final = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http-host",
        default=os.environ.get("VC_DASHBOARD__HOST"),
        help="address the pages are served on (env VC_DASHBOARD__HOST)",
    )
    parser.add_argument(
        "--http-port",
        type=int,
        default=os.environ.get("VC_DASHBOARD__PORT"),  # argparse converts it as it does the flag's value
        help=f"port of the pages (env VC_DASHBOARD__PORT; default {DEFAULT_PORT}, 0 picks a free one)",
    )
    parser.add_argument(
        "--identities",
        default=os.environ.get("VC_DASHBOARD__IDENTITIES"),
        help="who may log in: the identities.json of `vcctl user create` (env VC_DASHBOARD__IDENTITIES)",
    )
    parser.add_argument(
        "--admin-key",
        default=os.environ.get("VC_DASHBOARD__ADMIN_KEY"),
        help="the admin's NKey public key (U...), whose tokens see every namespace (env VC_DASHBOARD__ADMIN_KEY)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        help="a Host name the pages are served to; repeatable (default: --http-host and localhost)",
    )


class DashboardOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults (for want of the flag and its environment)."""

    http_host: str = "127.0.0.1"
    http_port: int = DEFAULT_PORT
    identities: str | None = None
    admin_key: str | None = None
    allowed_host: tuple[str, ...] = ()


class DashboardApp:
    name = "dashboard"

    def __init__(self, settings: RuntimeSettings) -> None:
        options = options_of(settings, DashboardOptions)
        self.host = options.http_host
        self.port = options.http_port
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"--http-port {self.port}: must be from 0 to 65535")
        if options.admin_key is not None and not is_user_public_key(options.admin_key):
            raise ConfigError("--admin-key: must be an NKey user public key (U...)")
        self.people = People(options.identities, options.admin_key)
        self.hosts = allowed_hosts(self.host, options.allowed_host)
        self.bound_port: int | None = None

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        hub = Hub()
        cache = ClusterCache(ReadOnlyStore(ctx.store), publish=hub.publish)
        gate = Gate(people=self.people, hosts=self.hosts)
        dashboard = Dashboard(cache=cache, hub=hub, nc=ctx.nc, gate=gate)
        ctx.probes.require("caches-synced", "http-listening")

        async def synced(shutdown: asyncio.Event) -> None:
            if await wait_synced(cache.synced, shutdown):
                ctx.probes.set("caches-synced")
                hub.publish(("Queue", "Job", "PodGroup", "Pod", "Node"))  # open pages drop their "reading" note
                log.info(
                    "caches.synced",
                    queues=len(cache.queues.items),
                    jobs=len(cache.jobs.items),
                    pods=len(cache.pods.items),
                    nodes=len(cache.nodes.items),
                )

        async def serve(shutdown: asyncio.Event) -> None:
            await self._serve(dashboard.application(), hub, ctx.probes, shutdown)

        return [
            *(FnWorker(f"watch:{i.kind.__name__}", i.run) for i in cache.informers),
            FnWorker("synced", synced),
            FnWorker("http", serve),
        ]

    async def _serve(self, app: web.Application, hub: Hub, probes: Probes, shutdown: asyncio.Event) -> None:
        runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()  # a taken port raises here: the service exits non-zero, saying so
            sockets = getattr(site._server, "sockets", None) or []
            self.bound_port = sockets[0].getsockname()[1] if sockets else self.port
            probes.set("http-listening")
            log.info("dashboard.listening", url=f"http://{self.host}:{self.bound_port}/")
            await shutdown.wait()
        finally:
            hub.close()
            with contextlib.suppress(Exception):
                await asyncio.shield(runner.cleanup())

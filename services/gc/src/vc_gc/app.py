"""Wiring of gc: membership, caches of jobs and dependents, the keyed dispatcher with timers, resync."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import structlog

from vc_bus.dispatch import KeyedDispatcher
from vc_gc.caches import GcCaches
from vc_gc.collector import Collector
from vc_gc.logic.owners import OwnerKey
from vc_runtime.membership import Membership
from vc_runtime.resync import resync_forever, wait_synced
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings
from vc_runtime.sharding import FencedStore
from vc_runtime.timers import Timers

log = structlog.get_logger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gc-aborted", action="store_true", help="also collect Aborted jobs after their TTL")
    parser.add_argument("--workers", type=int, default=4, help="owners handled concurrently")
    parser.add_argument("--lease-ttl", type=float, default=5.0, help="membership lease, seconds")


class GcApp:
    name = "gc"

    def __init__(self, settings: RuntimeSettings) -> None:
        extra = settings.extra
        self.gc_aborted = bool(extra.get("gc_aborted", False))
        self.workers = int(extra.get("workers", 4))  # type: ignore[call-overload]
        self.lease_ttl_s = float(extra.get("lease_ttl", 5.0))  # type: ignore[arg-type]
        self.membership: Membership | None = None

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        membership = Membership(
            ctx.nc,
            group=self.name,
            instance=ctx.settings.instance,
            ttl_s=self.lease_ttl_s,
            replicas=ctx.settings.nats_replicas,
        )
        dispatcher: KeyedDispatcher[OwnerKey] = KeyedDispatcher(self._handle, workers=self.workers, name=self.name)
        timers: Timers[OwnerKey] = Timers(dispatcher.submit_after)
        caches = GcCaches(ctx.store, submit=dispatcher.submit)
        self.collector = Collector(
            caches=caches,
            writer=FencedStore(ctx.store, membership),
            ownership=membership,
            arm=timers.arm,
            publish=ctx.events.publish,
            gc_aborted=self.gc_aborted,
        )
        self.membership = membership
        ctx.probes.require("caches-synced")

        def submit_all() -> None:
            timers.prune()
            for key in caches.owner_keys():
                dispatcher.submit(key)

        async def resync(shutdown: asyncio.Event) -> None:
            # Orphans are judged by absence: nothing may run before every cache holds the whole state.
            if not await wait_synced(caches.synced, shutdown):
                return
            ctx.probes.set("caches-synced")
            log.info("caches.synced", jobs=len(caches.jobs.items), gc_aborted=self.gc_aborted)
            await resync_forever(submit_all, membership, shutdown)

        return [
            FnWorker("membership", membership.run),
            *(FnWorker(f"watch:{i.kind.__name__}", i.run) for i in caches.informers),
            FnWorker("dispatcher", dispatcher.run),
            FnWorker("resync", resync),
        ]

    async def _handle(self, key: OwnerKey) -> None:
        await self.collector.handle(key)

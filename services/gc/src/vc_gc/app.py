"""Wiring of gc: membership, caches of jobs and dependents, the keyed dispatcher with timers, resync."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import msgspec
import structlog

from vc_bus.dispatch import KeyedDispatcher
from vc_gc.caches import GcCaches
from vc_gc.collector import Collector
from vc_gc.logic.owners import OwnerKey
from vc_runtime.membership import Membership
from vc_runtime.resync import resync_forever, wait_synced
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_runtime.sharding import FencedStore
from vc_runtime.timers import Timers

log = structlog.get_logger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gc-aborted", action="store_true", help="also collect Aborted jobs after their TTL")
    parser.add_argument("--workers", type=int, help="owners handled concurrently")
    parser.add_argument("--lease-ttl", type=float, help="membership lease, seconds")


class GcOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    gc_aborted: bool = False
    workers: int = 4
    lease_ttl: float = 5.0


class GcApp:
    name = "gc"

    def __init__(self, settings: RuntimeSettings) -> None:
        options = options_of(settings, GcOptions)
        self.gc_aborted = options.gc_aborted
        self.workers = options.workers
        self.lease_ttl_s = options.lease_ttl
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

"""Wiring of the flow controller: membership, caches, the keyed dispatcher with timers, resync.

Instances share JobFlows, JobTemplates and CronJobs by rendezvous hashing over membership leases, as
the other controllers share their keys; every write is fenced by the lease.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import msgspec
import structlog

from vc_bus.dispatch import KeyedDispatcher
from vc_flow_controller.caches import FlowCaches
from vc_flow_controller.controller import Clock, FlowController, wall_clock
from vc_flow_controller.jobwriter import JobWriter
from vc_flow_controller.logic.owners import OwnerKey
from vc_runtime.membership import Membership
from vc_runtime.resync import resync_forever, wait_synced
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_runtime.sharding import FencedStore
from vc_runtime.timers import Timers

log = structlog.get_logger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, help="flows and CronJobs handled at once")
    parser.add_argument("--lease-ttl", type=float, help="membership lease, seconds")


class FlowControllerOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    workers: int = 8
    lease_ttl: float = 5.0


class FlowControllerApp:
    name = "flow-controller"

    def __init__(self, settings: RuntimeSettings, *, clock: Clock = wall_clock) -> None:
        options = options_of(settings, FlowControllerOptions)
        self.workers = options.workers
        self.lease_ttl_s = options.lease_ttl
        self.clock = clock
        self.membership: Membership | None = None

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        membership = Membership(
            ctx.nc,
            group=self.name,
            instance=ctx.settings.instance,
            ttl_s=self.lease_ttl_s,
            replicas=ctx.settings.nats_replicas,
        )
        self.dispatcher: KeyedDispatcher[OwnerKey] = KeyedDispatcher(self._handle, workers=self.workers, name=self.name)
        timers: Timers[OwnerKey] = Timers(self.dispatcher.submit_after)
        self.caches = FlowCaches(ctx.store, submit=self.dispatcher.submit)
        writes = JobWriter(
            writer=FencedStore(ctx.store, membership),
            jobs=self.caches.jobs,
            publish=ctx.events.publish,
            clock=self.clock,
        )
        self.controller = FlowController(
            caches=self.caches, writes=writes, ownership=membership, arm=timers.arm, clock=self.clock
        )
        self.membership = membership
        ctx.probes.require("caches-synced")

        def submit_all() -> None:
            timers.prune()
            self.resync()

        async def resync(shutdown: asyncio.Event) -> None:
            # Owners are judged gone by absence: nothing may run before every cache holds the whole state.
            if not await wait_synced(self.caches.synced, shutdown):
                return
            ctx.probes.set("caches-synced")
            log.info("caches.synced", jobflows=len(self.caches.flows.items), cronjobs=len(self.caches.cronjobs.items))
            await resync_forever(submit_all, membership, shutdown)

        return [
            FnWorker("membership", membership.run),
            *(FnWorker(f"watch:{i.kind.__name__}", i.run) for i in self.caches.informers),
            FnWorker("dispatcher", self.dispatcher.run),
            FnWorker("resync", resync),
        ]

    def resync(self) -> None:
        """Every key once more (the periodic pass; tests call it after moving an injected clock)."""
        for key in self.caches.all_keys():
            self.dispatcher.submit(key)

    async def _handle(self, key: OwnerKey) -> None:
        await self.controller.handle(key)

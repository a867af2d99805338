"""Wiring of the job controller: informers, membership, the dispatcher, start-up sync."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import msgspec

from vc_job_controller.controller import JobController
from vc_job_controller.delays import DelayStore
from vc_runtime.aio import wait_or_stop
from vc_runtime.membership import Membership
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, help="jobs reconciled concurrently")
    parser.add_argument("--lease-ttl", type=float, help="seconds before a silent instance's jobs move")


class JobControllerOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    # Jobs reconciled at once. A pass spends its time waiting for a few writes in a row (with an fsync
    # each), not on the CPU, so the passes of many jobs must overlap: at 1,000 nodes / 10,000 pods, 16
    # workers left the controller's stage at a 9 s (job -> PodGroup) + 20 s (Inqueue -> pods) median,
    # with the process 90% idle; 64 workers: 2.4 s + 4.8 s; 128: 0.3 s + 1.1 s.
    workers: int = 128
    lease_ttl: float = 5.0


class JobControllerApp:
    name = "job-controller"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings
        self.options = options_of(settings, JobControllerOptions)

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        membership = Membership(
            ctx.nc,
            group=self.name,
            instance=self.settings.instance,
            ttl_s=self.options.lease_ttl,
            replicas=self.settings.nats_replicas,
        )
        controller = JobController(
            ctx.store,
            ctx.events.publish_batch,
            membership,
            source=f"{self.name}/{self.settings.instance}",
            workers=self.options.workers,
            delays=DelayStore(ctx.nc, replicas=self.settings.nats_replicas),
        )
        informers = (
            controller.jobs,
            controller.pods,
            controller.podgroups,
            controller.commands,
            controller.priority_classes,
            controller.queues,
        )
        ctx.probes.require("caches-synced", "membership")

        async def start(shutdown: asyncio.Event) -> None:
            for informer in informers:
                if not await wait_or_stop(informer.synced, shutdown):
                    return
            ctx.probes.set("caches-synced")
            await membership.wait_settled()
            ctx.probes.set("membership")
            await controller.restore_delays()
            controller.startup_requests()

        return [
            FnWorker("membership", membership.run),
            *(FnWorker(f"informer:{i.kind.__name__}", i.run) for i in informers),
            FnWorker("start", start),
            FnWorker("membership-follow", controller.follow_membership),
            FnWorker("dispatcher", controller.dispatcher.run),
        ]

"""Wiring of the job controller: informers, membership, the dispatcher, start-up sync."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

from vc_job_controller.controller import JobController
from vc_job_controller.delays import DelayStore
from vc_runtime.aio import wait_or_stop
from vc_runtime.membership import Membership
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=16, help="jobs reconciled concurrently")
    parser.add_argument("--lease-ttl", type=float, default=5.0, help="seconds before a silent instance's jobs move")


class JobControllerApp:
    name = "job-controller"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        extra = self.settings.extra
        membership = Membership(ctx.nc, group=self.name, instance=self.settings.instance, ttl_s=float(extra.get("lease_ttl", 5.0)),  # type: ignore[arg-type]
                                replicas=self.settings.nats_replicas)
        controller = JobController(
            ctx.store, ctx.events.publish_batch, membership, source=f"{self.name}/{self.settings.instance}",
            workers=int(extra.get("workers", 16)),  # type: ignore[call-overload]
            delays=DelayStore(ctx.nc, replicas=self.settings.nats_replicas),
        )
        informers = (controller.jobs, controller.pods, controller.podgroups, controller.commands, controller.priority_classes,
                     controller.queues)
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

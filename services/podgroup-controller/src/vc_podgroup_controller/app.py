"""Wiring of the podgroup controller: membership, the pod cache, the keyed dispatcher, resync."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import msgspec
import structlog

from vc_bus.dispatch import KeyedDispatcher
from vc_podgroup_controller.controller import GroupKey, PodGroupController
from vc_proto.vocabulary import DEFAULT_SCHEDULER_NAME
from vc_runtime.membership import Membership
from vc_runtime.resync import resync_forever, wait_synced
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_runtime.sharding import FencedStore

log = structlog.get_logger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, help="groups handled concurrently (Volcano: 5)")
    parser.add_argument(
        "--scheduler-name",
        action="append",
        help=f"a Volcano scheduler name; repeatable (default {DEFAULT_SCHEDULER_NAME})",
    )
    parser.add_argument("--lease-ttl", type=float, help="membership lease, seconds")


class PodGroupControllerOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    workers: int = 5
    scheduler_name: tuple[str, ...] = (DEFAULT_SCHEDULER_NAME,)
    lease_ttl: float = 5.0


class PodGroupControllerApp:
    name = "podgroup-controller"

    def __init__(self, settings: RuntimeSettings) -> None:
        options = options_of(settings, PodGroupControllerOptions)
        self.workers = options.workers
        self.scheduler_names = frozenset(options.scheduler_name)
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
        dispatcher: KeyedDispatcher[GroupKey] = KeyedDispatcher(self._handle, workers=self.workers, name=self.name)
        self.controller = PodGroupController(
            store=ctx.store,
            writer=FencedStore(ctx.store, membership),
            ownership=membership,
            scheduler_names=self.scheduler_names,
            submit=dispatcher.submit,
        )
        self.membership = membership
        ctx.probes.require("caches-synced")

        def submit_all() -> None:
            for group in self.controller.waiting_groups():
                dispatcher.submit(group)

        async def resync(shutdown: asyncio.Event) -> None:
            if not await wait_synced(self.controller.synced, shutdown):
                return
            ctx.probes.set("caches-synced")
            log.info("caches.synced", pods=len(self.controller.pods.items))
            await resync_forever(submit_all, membership, shutdown)

        return [
            FnWorker("membership", membership.run),
            FnWorker("watch:Pod", self.controller.pods.run),
            FnWorker("watch:Queue", self.controller.queues.run),
            FnWorker("dispatcher", dispatcher.run),
            FnWorker("resync", resync),
        ]

    async def _handle(self, group: GroupKey) -> None:
        await self.controller.handle(group)

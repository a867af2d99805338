"""Wiring of the queue controller: membership, caches, the keyed dispatcher, resync."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import msgspec
import structlog

from vc_bus.dispatch import KeyedDispatcher
from vc_queue_controller.caches import QueueCaches
from vc_queue_controller.controller import QueueController
from vc_queue_controller.debounce import Debouncer
from vc_queue_controller.keys import Key, command_key, queue_key
from vc_runtime.membership import Membership
from vc_runtime.resync import resync_forever, wait_synced
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_runtime.sharding import FencedStore

log = structlog.get_logger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, help="queues handled concurrently (Volcano: 5)")
    parser.add_argument("--lease-ttl", type=float, help="membership lease, seconds")


class QueueControllerOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    workers: int = 5
    lease_ttl: float = 5.0


class QueueControllerApp:
    name = "queue-controller"

    def __init__(self, settings: RuntimeSettings) -> None:
        options = options_of(settings, QueueControllerOptions)
        self.workers = options.workers
        self.lease_ttl_s = options.lease_ttl
        self.membership: Membership | None = None
        self.dispatcher: KeyedDispatcher[Key] | None = None
        self.caches: QueueCaches
        self.controller: QueueController

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        membership = Membership(
            ctx.nc,
            group=self.name,
            instance=ctx.settings.instance,
            ttl_s=self.lease_ttl_s,
            replicas=ctx.settings.nats_replicas,
        )
        dispatcher: KeyedDispatcher[Key] = KeyedDispatcher(self._handle, workers=self.workers, name=self.name)
        debouncer: Debouncer[Key] = Debouncer(dispatcher.submit_after)
        caches = QueueCaches(
            ctx.store,
            submit_queue=lambda name: dispatcher.submit(queue_key(name)),
            submit_command=lambda key: dispatcher.submit(command_key(*key)),
            hint_queue=lambda name: debouncer.hint(queue_key(name)),
        )
        self.controller = QueueController(
            caches=caches,
            writer=FencedStore(ctx.store, membership),
            ownership=membership,
            publish=ctx.events.publish,
            submit=dispatcher.submit,
            on_pass=debouncer.passing,
            pass_took=debouncer.took,
        )
        self.membership, self.dispatcher, self.caches = membership, dispatcher, caches
        ctx.probes.require("caches-synced")

        async def resync(shutdown: asyncio.Event) -> None:
            if await wait_synced(caches.synced, shutdown):
                ctx.probes.set("caches-synced")
                log.info("caches.synced", queues=len(caches.queues.items), podgroups=len(caches.podgroups.items))
                await resync_forever(self._submit_all, membership, shutdown)

        return [
            FnWorker("membership", membership.run),
            *(FnWorker(f"watch:{i.kind.__name__}", i.run) for i in caches.informers),
            FnWorker("dispatcher", dispatcher.run),
            FnWorker("resync", resync),
        ]

    async def _handle(self, key: Key) -> None:
        await self.controller.handle(key)

    def _submit_all(self) -> None:
        assert self.dispatcher is not None
        for key in self.caches.keys():
            self.dispatcher.submit(key)

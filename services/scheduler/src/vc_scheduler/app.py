"""Wiring of the scheduler service: membership, cache watches, the placement ledger, the loop, and the
writers it hands work to (gang binder, evictor, status writer) over one bounded in-flight queue.

Any number of instances run at once (`vcctl up --scheduler-replicas N`): each owns the PodGroups and
the nodes `share.owner_of` gives it among the live members and plans over that share (share.py,
docs/scale-out.md); a node has one writer, its owner, and others place there with its loan
(lending.py).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Annotated

import msgspec
import structlog

from vc_core.errors import ConfigError, InvalidObject
from vc_runtime.aio import wait_or_stop
from vc_runtime.membership import Membership
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_sched_core.cycle import load_scheduler_conf
from vc_scheduler.binder import GangBinder
from vc_scheduler.cache import KINDS, SHARDED_KINDS, SchedulerCache
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.evictor import Evictor
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger_kv import Ledger
from vc_scheduler.ledger_sweep import LedgerSweeper
from vc_scheduler.loans import LoanDesk
from vc_scheduler.loop import DEFAULT_BINDS_PER_CYCLE, MAX_BINDS_PER_CYCLE, SchedulingLoop
from vc_scheduler.metrics import declare_series
from vc_scheduler.peers import Several
from vc_scheduler.shard_feed import FollowedPods
from vc_scheduler.share import owner_of
from vc_scheduler.status_writer import StatusWriter

log = structlog.get_logger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheduler-conf", help="Volcano scheduler configuration YAML (default: Volcano's default)")
    parser.add_argument(
        "--strict-conf",
        action="store_true",
        help="refuse a conf that names a Volcano plugin Tephra lacks (default: load without it, with a warning)",
    )
    parser.add_argument(
        "--schedule-period",
        type=float,
        help="how long the loop waits for new work before it looks again, in seconds "
        "(after a cycle it first rests as long as the cycle took)",
    )
    parser.add_argument("--lease-ttl", type=float, help="seconds before a silent instance's PodGroups move")
    parser.add_argument(
        "--binds-per-cycle",
        type=int,
        help=f"the most binds one cycle decides; the next cycle takes the rest at once. With several "
        f"instances each cycle decides its share's part of it (0: no bound; default {DEFAULT_BINDS_PER_CYCLE:,})",
    )


class SchedulerOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    scheduler_conf: str | None = None
    strict_conf: bool = False
    schedule_period: float = 1.0
    lease_ttl: float = 5.0
    binds_per_cycle: Annotated[int, msgspec.Meta(ge=0, le=MAX_BINDS_PER_CYCLE)] = DEFAULT_BINDS_PER_CYCLE


class SchedulerApp:
    name = "scheduler"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings
        options = options_of(settings, SchedulerOptions)
        try:
            text = Path(options.scheduler_conf).read_text() if options.scheduler_conf else None
            self.conf = load_scheduler_conf(text, strict=options.strict_conf)
        except (OSError, InvalidObject, ValueError) as exc:
            raise ConfigError(f"--scheduler-conf: {exc}") from exc
        for warning in self.conf.warnings():
            log.warning("scheduler_conf_plugin_skipped", detail=warning)
        self.period_s = options.schedule_period
        self.lease_ttl_s = options.lease_ttl
        self.binds_per_cycle = options.binds_per_cycle or None

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        cache = SchedulerCache(share_only=True)
        source = f"scheduler/{self.settings.instance}"
        replicas = self.settings.nats_replicas
        membership = Membership(
            ctx.nc,
            group="scheduler",
            instance=self.settings.instance,
            ttl_s=self.lease_ttl_s,
            replicas=replicas,
            assign=owner_of,
        )
        js = ctx.nc.jetstream()
        ledger = Ledger(
            js,
            instance=membership.instance,
            can_write=membership.can_write,
            replicas=replicas,
            on_record=cache.index.others.apply,
        )
        work = InFlight(membership.instance)
        peers = Several(
            ledger, pods=FollowedPods(js, cache), in_flight=lambda: work.unfinished("Gang") + cache.unseen_binds()
        )
        desk = LoanDesk(ctx.nc, cache, ownership=membership, lending=peers)
        declare_series(membership.instance)
        events = SchedulerEvents(ctx.events.publish, source=source)
        binder = GangBinder(
            ctx.store, cache, events, ownership=membership, work=work, ledger_kv=ledger, peers=peers, desk=desk
        )
        loop = SchedulingLoop(
            cache,
            self.conf,
            binder=binder,
            evictor=Evictor(ctx.store, events, ownership=membership, work=work),
            statuses=StatusWriter(ctx.store, cache, events, ownership=membership, work=work),
            period_s=self.period_s,
            binds_per_cycle=self.binds_per_cycle,
            instance=membership.instance,
            members=membership,
            peers=peers,
            work=work,
            desk=desk,
        )
        sweeper = LedgerSweeper(ledger, membership, lambda: loop.last_view)
        ctx.probes.require("cache-synced", "membership")

        async def schedule(shutdown: asyncio.Event) -> None:
            # Not the pods and PodGroups: the cache reads those of its shards once the loop knows which
            # they are (its first cycle waits for them: shard_feed.py).
            for synced in (*(cache.synced[kind] for kind in KINDS if kind not in SHARDED_KINDS), ledger.synced):
                if not await wait_or_stop(synced, shutdown):
                    return
            ctx.probes.set("cache-synced")
            await membership.wait_settled()
            ctx.probes.set("membership")
            await loop.run(shutdown)

        async def expect_alone(shutdown: asyncio.Event) -> None:
            # Alone once settled (a lone instance, or a restart with no other member): the share is the
            # whole cluster, so the cache reads every pod, whole, at once (before the first cycle).
            settled = asyncio.ensure_future(membership.wait_settled())
            stop = asyncio.ensure_future(shutdown.wait())
            try:
                await asyncio.wait((settled, stop), return_when=asyncio.FIRST_COMPLETED)
            finally:
                settled.cancel()
                stop.cancel()
            if settled.done() and not settled.cancelled():
                settled.result()  # a wait that failed says so
                if membership.members == (membership.instance,):
                    cache.expect_alone()

        async def follow_membership(shutdown: asyncio.Event) -> None:
            # Ownership moved (a join, a leave, a crash, another instance announcing the members it plans
            # under): wake the loop, which plans for the new partition once its rest after the last cycle
            # is over instead of at the next period.
            while not shutdown.is_set():
                ledger.announcements.clear()
                changed = asyncio.create_task(membership.wait_changed())
                announced = asyncio.create_task(ledger.announcements.wait())
                stop = asyncio.create_task(shutdown.wait())
                await asyncio.wait({changed, announced, stop}, return_when=asyncio.FIRST_COMPLETED)
                for task in (changed, announced, stop):
                    task.cancel()
                cache.shared_work = True
                cache.changed.set()

        return [
            FnWorker("membership", membership.run),
            *(FnWorker(f"cache:{kind}", partial(cache.follow, js, kind)) for kind in KINDS),
            FnWorker("ledger", ledger.follow),
            FnWorker("loans", desk.serve),
            FnWorker("loop", schedule),
            FnWorker("ledger-sweep", sweeper.run),
            FnWorker("membership-follow", follow_membership),
            FnWorker("expect-alone", expect_alone),
            FnWorker("in-flight", work.run),
        ]

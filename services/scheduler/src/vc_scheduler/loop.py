"""SHELL: the scheduling loop. Every --schedule-period, or early when work arrives, snapshot the
cache, cut it down to this instance's share (sharding.py), run one cycle in a worker thread (the core
is pure and the snapshot immutable), assume its binds and hand them to the dispatcher as gangs.

Also sweeps the ledger keys this instance owns, so reservations of finished pods and of crashed
instances are reclaimed even on nodes nobody reserves on right now.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction

import structlog

from vc_core.errors import VcError
from vc_core.resources import parse_resources
from vc_proto.subjects import unescape_token
from vc_scheduler import metrics
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.dispatch import Dispatcher, Gang
from vc_scheduler.ledger import Record, View, queue_chain
from vc_scheduler.ledger import prune as prune_record
from vc_scheduler.ledger_kv import Ledger
from vc_scheduler.sharding import (
    Ownership,
    PodStateMemo,
    SoleOwner,
    ledger_view,
    live_reservations,
    node_capacity,
    owner_filter,
    podgroup_key,
    shard_snapshot,
)
from vc_scheduling.cycle import CycleResult, run_cycle
from vc_scheduling.framework.build import TaskMemo
from vc_scheduling.framework.conf import SchedulerConf
from vc_scheduling.framework.decisions import Bind, Evict, PodGroupStatusUpdate, QueueStatusUpdate
from vc_scheduling.snapshot.cluster import ROOT_QUEUE, ClusterSnapshot, PodGroupCondition, PodGroupObj, QueueObj

log = structlog.get_logger(__name__)
MIN_GAP_S = 0.05
SWEEP_EVERY_S = 2.0
STATUS_RESEND_S = 5.0
# A PodGroup whose phase and conditions hold gets its pod counts rewritten at most this often.
COUNTS_EVERY_S = 1.0
ALLOCATED_EVERY_S = 1.0  # a queue's status.allocated is rewritten at most this often


@dataclass(frozen=True, slots=True)
class Plan:
    """What one cycle produced, with the views the dispatcher checks its reservations against."""

    result: CycleResult
    snapshot: ClusterSnapshot
    view: View
    owned: int
    shard_s: float


def plan_cycle(
    full: ClusterSnapshot,
    conf: SchedulerConf,
    *,
    instance: str,
    epoch: int,
    members: tuple[str, ...],
    gone: frozenset[str],
    assumed: frozenset[str],
    ledger_records: list[tuple[str, Record]],
    session_uid: str,
    sharded: bool,
    memo: TaskMemo | None = None,
    states: PodStateMemo | None = None,
) -> Plan:
    """PURE (runs in a worker thread): view, shard, one scheduling cycle. The memos carry work on
    unchanged pods over from the previous call."""
    started = time.perf_counter()
    view = ledger_view(
        full, gone=gone, live=frozenset(members), instance=instance, epoch=epoch, assumed=assumed, memo=states
    )
    if sharded:
        owns = owner_filter(instance, members)
        reserved = live_reservations(ledger_records, view, time.time())
        snapshot = shard_snapshot(full, owns, reserved)
        owned = sum(1 for pg in full.podgroups if owns(pg.key))
    else:
        snapshot, owned = full, len(full.podgroups)
    shard_s = time.perf_counter() - started
    result = run_cycle(snapshot, conf, now=datetime.now(UTC), session_uid=session_uid, memo=memo)
    return Plan(result, snapshot, view, owned, shard_s)


def _conditions(conditions: tuple[PodGroupCondition, ...]) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status or "", c.reason or "", c.message or "") for c in conditions}


def _signature(update: PodGroupStatusUpdate) -> tuple[object, ...]:
    """An update without its transition ids (they differ per session even when nothing changed)."""
    return (
        update.phase,
        update.running,
        update.succeeded,
        update.failed,
        tuple(sorted(_conditions(update.conditions).items())),
    )


def _counts_only(sent: tuple[object, ...], now: tuple[object, ...]) -> bool:
    """Two signatures differ only in the pod counts (phase and conditions are the same)."""
    return sent[0] == now[0] and sent[4] == now[4] and sent != now


def _stored_matches(phase: str, stored: tuple[PodGroupCondition, ...], update: PodGroupStatusUpdate) -> bool:
    """The stored status already says what the update says (stored conditions may hold more types:
    a write keeps the conditions an update does not mention)."""
    have = _conditions(stored)
    return phase == update.phase and all(have.get(t) == v for t, v in _conditions(update.conditions).items())


def hierarchical(conf: SchedulerConf) -> bool:
    """Whether the conf enforces ancestors' capabilities (capacity with enableHierarchy); without it
    Volcano ignores `spec.parent` for capability, and so does the ledger."""
    return any(
        option.name == "capacity" and bool({**option.arguments, **option.flags}.get("enableHierarchy"))
        for tier in conf.tiers
        for option in tier.plugins
    )


def _capped(
    pg: PodGroupObj | None, queues: Mapping[str, QueueObj], *, tree: bool
) -> tuple[tuple[str, dict[str, Fraction]], ...]:
    """The PodGroup's queue and (in a queue tree) its ancestors, nearest first, that have a capability."""
    if pg is None:
        return ()
    if not tree:
        own = queues.get(pg.queue)
        return ((own.name, dict(own.capability)),) if own is not None and own.capability else ()
    parents = {name: q.parent or ROOT_QUEUE for name, q in queues.items() if name != ROOT_QUEUE}
    chain = (queues[name] for name in queue_chain(pg.queue, parents) if name in queues)
    return tuple((q.name, dict(q.capability)) for q in chain if q.capability)


class SchedulingLoop:
    def __init__(
        self,
        cache: SchedulerCache,
        dispatcher: Dispatcher,
        conf: SchedulerConf,
        *,
        period_s: float,
        instance: str,
        members: Ownership | None = None,
        ledger_kv: Ledger | None = None,
    ) -> None:
        self.cache = cache
        self.dispatcher = dispatcher
        self.conf = conf
        self.period_s = period_s
        self.instance = instance
        self.members: Ownership = members or SoleOwner(instance)
        self.ledger = ledger_kv
        self.cycles = itertools.count(1)
        self.last: CycleResult | None = None
        self._last_view: View | None = None
        self._statuses: dict[str, tuple[tuple[object, ...], float]] = {}  # PodGroup -> (last status sent, when)
        self._memo = TaskMemo()  # tasks of unchanged pods carry over between cycles
        self._states_memo = PodStateMemo()  # and so do their ledger states
        self._tree = hierarchical(conf)
        self._allocated_sent: dict[str, tuple[dict[str, str], float]] = {}  # queue -> (allocated, when)

    async def run(self, shutdown: asyncio.Event) -> None:
        while not shutdown.is_set():
            started = time.monotonic()
            self.cache.changed.clear()
            if self.members.can_write():
                try:
                    await self.run_once()
                except Exception as exc:  # one bad cycle must not stop scheduling; the next one re-plans
                    metrics.CYCLE_ERRORS.labels(self.instance).inc()
                    log.error("cycle.failed", error=repr(exc), traceback=traceback.format_exc(limit=20))
            await self._wait_for_work(shutdown, started)

    async def run_once(self) -> CycleResult:
        cycle = next(self.cycles)
        members = self.members
        plan = await asyncio.to_thread(
            plan_cycle,
            self.cache.snapshot(),
            self.conf,
            instance=members.instance,
            epoch=members.epoch,
            members=members.members,
            gone=self.cache.gone(),
            assumed=self.cache.assumed(),
            ledger_records=self.ledger.records() if self.ledger else [],
            session_uid=f"{self.instance}-{cycle}",
            sharded=self.ledger is not None,
            memo=self._memo,
            states=self._states_memo,
        )
        result = plan.result
        self.last = result
        self._last_view = plan.view
        self._record(plan)
        if not members.can_write():
            return result  # the lease lapsed while we planned: another instance may own these now
        for gang in self._gangs(plan):
            for bind in gang.binds:
                self.cache.assume(bind.pod, bind.node)
            self.dispatcher.submit(gang)
        for decision in result.decisions:
            if isinstance(decision, Evict):
                self.dispatcher.submit(decision)
        for key, update in result.podgroups.items():
            if self._status_changed(key, update):
                self.dispatcher.submit(update)
        for queue in result.queues:
            if self._allocated_due(queue):
                self.dispatcher.submit(queue)
        if result.decisions:
            log.info(
                "cycle.finished",
                cycle=cycle,
                binds=len(result.binds),
                evictions=len(result.evictions),
                pending=result.stats.tasks_pending,
                owned=plan.owned,
                members=len(members.members),
                duration_ms=round(result.stats.duration_s * 1000, 1),
                shard_ms=round(plan.shard_s * 1000, 1),
            )
        return result

    def _status_changed(self, key: str, update: PodGroupStatusUpdate) -> bool:
        """Every cycle reports every PodGroup's status; a write (a read and a compare-and-set) is
        only worth it when the status differs from what we last sent. What we sent is re-sent only
        if the store still disagrees after a while (the write failed, or another writer won):
        until then the watch simply has not caught up."""
        if not self.members.owns(key):
            return False
        signature, now = _signature(update), time.monotonic()
        sent = self._statuses.get(key)
        if sent is not None and _counts_only(sent[0], signature) and now - sent[1] < COUNTS_EVERY_S:
            return False  # only running/succeeded/failed moved: wait, so a gang's pods make one write
        if sent is not None and sent[0] == signature:
            cached = self.cache.podgroups.get(key)
            if now - sent[1] < STATUS_RESEND_S or (
                cached is not None and _stored_matches(cached.phase, cached.conditions, update)
            ):
                return False
        self._statuses[key] = (signature, now)
        if len(self._statuses) > 4 * max(1024, len(self.cache.podgroups)):
            live = self.cache.podgroups
            self._statuses = {k: v for k, v in self._statuses.items() if k in live}
        return True

    def _allocated_due(self, update: QueueStatusUpdate) -> bool:
        """A queue's `status.allocated` is written by the instance owning the queue, when it changed,
        at most every ALLOCATED_EVERY_S (binds move it many times a second on a busy cluster)."""
        if update.queue not in self.cache.queues or not self.members.owns(f"queue:{update.queue}"):
            return False
        now = time.monotonic()
        sent = self._allocated_sent.get(update.queue)
        if sent is not None and (sent[0] == update.allocated or now - sent[1] < ALLOCATED_EVERY_S):
            return False
        self._allocated_sent[update.queue] = (update.allocated, now)
        return True

    def _gangs(self, plan: Plan) -> list[Gang]:
        """The cycle's binds grouped by PodGroup, each with what its ledger reservations need."""
        snapshot = plan.snapshot
        pods = {p.key: p for p in snapshot.pods}
        groups = {pg.key: pg for pg in snapshot.podgroups}
        queues = {q.name: q for q in snapshot.queues}
        nodes = {n.name: n for n in snapshot.nodes}
        by_group: dict[str | None, list[Bind]] = defaultdict(list)
        for decision in plan.result.decisions:
            if isinstance(decision, Bind):
                pod = pods.get(decision.pod)
                by_group[podgroup_key(pod) if pod else None].append(decision)
        gangs = []
        for key, binds in by_group.items():
            requests = {b.uid: dict(pods[b.pod].requests) for b in binds if b.pod in pods}
            capacities = {b.node: node_capacity(nodes[b.node]) for b in binds if b.node in nodes}
            pg = groups.get(key) if key else None
            capped = _capped(pg, queues, tree=self._tree)
            gangs.append(Gang(key, tuple(binds), requests, capacities, plan.view, capped_queues=capped))
        return gangs

    def _record(self, plan: Plan) -> None:
        result = plan.result
        metrics.E2E.observe(result.stats.duration_s * 1000)
        for name, seconds in result.stats.durations_s.items():
            if name.startswith("action:"):
                metrics.ACTION.labels(name.removeprefix("action:")).observe(seconds * 1000)
        binds = len(result.binds)
        metrics.ATTEMPTS.labels("scheduled").inc(binds)
        metrics.ATTEMPTS.labels("unschedulable").inc(max(0, result.stats.tasks_pending - binds))
        metrics.OWNED.labels(self.instance).set(plan.owned)
        metrics.MEMBERS.labels(self.instance).set(len(self.members.members))
        allocated: dict[str, dict[str, Fraction]] = {}
        for update in result.queues:
            try:
                allocated[update.queue] = parse_resources(update.allocated)
            except VcError:
                continue
        metrics.record_queues(plan.snapshot.queues, allocated)

    async def _wait_for_work(self, shutdown: asyncio.Event, started: float) -> None:
        """Sleep until the period is over, or earlier (but not busier than MIN_GAP_S) when objects change."""
        await asyncio.sleep(MIN_GAP_S)
        deadline = started + self.period_s
        while not shutdown.is_set() and time.monotonic() < deadline:
            if self.cache.changed.is_set():
                return
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await self.cache.changed.wait()
            except TimeoutError:
                return

    # -- ledger sweeping ---------------------------------------------------------------------------
    async def sweep(
        self, shutdown: asyncio.Event, *, every_s: float = SWEEP_EVERY_S, clock: Callable[[], float] = time.time
    ) -> None:
        """Prune the ledger keys this instance owns (rendezvous on the key) of dead reservations."""
        while not shutdown.is_set():
            try:
                async with asyncio.timeout(every_s):
                    await shutdown.wait()
                return
            except TimeoutError:
                pass
            view, ledger_kv = self._last_view, self.ledger
            if view is None or ledger_kv is None or not self.members.can_write():
                continue
            now = clock()
            for key, record in ledger_kv.records():
                if not self.members.owns(f"ledger:{key}"):
                    continue
                node = unescape_token(key.removeprefix("node.")) if key.startswith("node.") else None
                if prune_record(record, view, now, node=node) is record:
                    continue
                try:
                    await ledger_kv.prune(key, view, node=node)
                except Exception as exc:  # transport boundary: the next sweep tries again
                    log.info("ledger.sweep_failed", key=key, error=repr(exc))

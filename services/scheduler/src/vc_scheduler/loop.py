"""SHELL: the scheduling loop. Every --schedule-period, or earlier when work arrives, gather this
instance's share of the cache (share.py: its own nodes and PodGroups, and what the rest adds up to),
run one cycle over it in a worker thread (the core is pure and the snapshot immutable), and when an
admitted PodGroup of the share still waits, a second one that may borrow other instances' nodes. Each
PodGroup's gang goes to the binder (which assumes its binds) as soon as the session will bind no more of
it, while the session still plans (streamed.py); the rest of the gangs, the evictions and every status
go when it returns. The loop never waits for those writes; they run bounded in the in-flight queue
(inflight.py). While the session opens, the cache applies no change from its watches (they wait in the
server until the first binds come, at most cache.HOLD_MAX_S): the snapshot is taken, and the opening
gets the GIL.

A period with nothing changed and nothing due by time alone runs no cycle (idle.py has the rule). What
a cycle builds is carried to the next (the session's opening state; the cache keeps the share's index
per change), so a cycle's cost follows what changed since the last one, within the share. After a
cycle the loop rests as long as the cycle took (rest_after), or, after a cycle that bound pods, until
the binder has only as much left as it writes before the next cycle's first bind (gangs_left_at_opening),
if that comes first; so the period is the longest wait between cycles while nothing new arrives, not
their cadence. When no new work waits, the carried state is brought to the share as the cycle left it
while the binder writes (_prepare), so the next opening has little to patch.
A cycle decides at most --binds-per-cycle binds; one that had to leave jobs for later (deferred) is
followed by the next as soon as its binder is down to its tail, so a large backlog is placed in a stream
of cycles of bounded length at the pace its binds are written.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import traceback
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog

from vc_core.ownership import Ownership
from vc_proto.pod_shards import SHARDS
from vc_runtime.aio import wait_or_stop
from vc_runtime.sharding import SoleOwner
from vc_sched_core.cycle import CycleResult
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.framework.decisions import Bind, Evict
from vc_sched_core.framework.framework import SCHEDULER_NAMES
from vc_scheduler import metrics
from vc_scheduler.binder import GangBinder
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.evictor import Evictor
from vc_scheduler.gangs import Gang, GangMaker, hierarchical
from vc_scheduler.idle import IdleGate, Inputs
from vc_scheduler.inflight import MAX_IN_FLIGHT, InFlight
from vc_scheduler.ledger import View
from vc_scheduler.loans import LoanDesk
from vc_scheduler.peers import Alone, Peers
from vc_scheduler.planning import Cycle, Plan, plan_borrowing, plan_cycle
from vc_scheduler.share import Partition, Share, holds_settled_out, left_over
from vc_scheduler.status_writer import StatusWriter
from vc_scheduler.streamed import StreamedBinds

log = structlog.get_logger(__name__)
MIN_GAP_S = 0.05
# How long a cycle waits for the cache to read the pods of shards its instance took (the members changed)
# before it gives up, to try again once the cache has read them (shard_feed.py).
SHARE_READ_WAIT_S = 5.0
# Gangs handed to the binder and not yet bound beyond which no cycle starts: the binder (on the event
# loop) cannot keep up, and planning more (in a thread, holding the GIL) would only slow it further;
# the next cycle plans on what is bound by then.
BACKLOG_GANGS = 2 * MAX_IN_FLIGHT
HOLD_BACK_MAX_S = 2.0  # ...but not longer than this since the last cycle (new PodGroups wait to be enqueued)
# A cycle reports only the PodGroup statuses that may have changed; one at least this often reports all.
FULL_REPORT_S = 60.0
BORROW_EVERY_S = 1.0
# The most binds one cycle decides (--binds-per-cycle; with several instances, each its shards' part of it:
# bind_budget). A cycle's binds stream to the binder as it plans,
# but a cycle over a very large backlog (a burst of submissions at the seeds' scale) still plans for
# about 0.5 ms per pod here, 50 s for 100,000, and its jobs' statuses and the next cycle's new pods wait
# for its end. A bound keeps each cycle to several seconds; the next one starts at once and takes the
# rest. It is high enough that a steady load never meets it: the part of a cycle that does not depend on
# its binds (about 1 s over 10,000 pending gangs) is then paid once per 20,000 binds (docs/benchmarks.md).
DEFAULT_BINDS_PER_CYCLE = 20_000
OPEN = "session:open"  # the cycle's opening in its stats' durations
MAX_BINDS_PER_CYCLE = 1_000_000


def bind_budget(binds_per_cycle: int | None, partition: Partition) -> int | None:
    """The most binds one cycle of this instance decides: its shards' part of --binds-per-cycle (all of it
    alone). A cycle's part that does not depend on its binds grows with its share's pending jobs, so a
    share's cycle bounded by its share of the bound costs, per bind, what one instance's cycle over the
    whole cluster does, and lasts a share of its time: the instances together decide as many binds per
    round of cycles as one would, each round as long as one instance's cycle over a share."""
    if binds_per_cycle is None:
        return None
    return max(1, -(-binds_per_cycle * len(partition.shards) // SHARDS))


def rest_after(cycle_s: float) -> float:
    """How long the loop rests after a cycle that took `cycle_s` before it may start the next: as long
    as the cycle took, at least MIN_GAP_S. A cycle plans in a worker thread holding the GIL, so cycles
    back to back starve the event loop (the binder, the cache's following) and, on shared cores, the
    other services; and part of a cycle's cost is its share's whole state (bringing the carried state up
    to every change, the plugins' opening over every job), so a cycle that waits longer carries more
    work for the same cost: an instance plans at most half of its time (see docs/benchmarks.md for the
    figures this rests on). The binder having written a cycle's binds ends the rest sooner (_rest)."""
    return max(MIN_GAP_S, cycle_s)


def gangs_left_at_opening(written: int, cycle_s: float, first_bind_s: float) -> int:
    """How many gangs the binder may still have to write when the next cycle starts, after a cycle of
    `cycle_s` whose first bind came `first_bind_s` after it started, while the binder wrote `written`: as
    many as it writes at that pace until the next cycle binds. The next opening then overlaps the
    binder's tail. Waiting until the binder was idle left it nothing to write while the next cycle
    opened, at the seeds' scale 6-10 s with no pod bound; counting only the opening, not what a cycle
    does before its first bind (enqueueing, ordering the jobs), left it idle for 3-6 s
    (docs/benchmarks.md)."""
    return int(written * first_bind_s / max(cycle_s, MIN_GAP_S))


class ShareUnread(Exception):
    """The cache is still reading the pods of the share's shards: a cycle would plan on part of them."""


class SchedulingLoop:
    def __init__(
        self,
        cache: SchedulerCache,
        conf: SchedulerConf,
        *,
        binder: GangBinder,
        evictor: Evictor,
        statuses: StatusWriter,
        period_s: float,
        instance: str,
        binds_per_cycle: int | None = DEFAULT_BINDS_PER_CYCLE,
        members: Ownership | None = None,
        peers: Peers | None = None,
        work: InFlight | None = None,
        desk: LoanDesk | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """`desk`: how it asks other instances what their nodes have left, to borrow there (none: it
        borrows nothing). `clock` and `sleep` are for tests: `clock` must be the event loop's (time.monotonic) wherever
        the loop also waits with asyncio.timeout, and the status writer's, whose due times the idle gate
        compares with it."""
        self.cache = cache
        self.conf = conf
        self.binder = binder
        self.evictor = evictor
        self.statuses = statuses
        self.period_s = period_s
        self.binds_per_cycle = binds_per_cycle
        self.instance = instance
        self.members: Ownership = members or SoleOwner(instance)
        self.peers: Peers = peers or Alone(instance)
        self.work = work  # the writes' queue, to hold planning back while binds are backlogged
        self.desk = desk
        self._clock, self._sleep = clock, sleep
        self.cycles = itertools.count(1)
        self.last: CycleResult | None = None
        self.last_view: View | None = None  # the ledger sweeper prunes against it
        # Carried between cycles (a cycle's cost follows what changed): the session's opening state, the
        # share's builder (its reserved copies) and the partition.
        self._carried = CarriedState()
        self._share = Share(
            cache.snapshot, cache.full_pod, cache.index, hold_settled=holds_settled_out(conf), gone=cache.gone
        )
        self._parts: Partition | None = None
        self._borrowed_at = -BORROW_EVERY_S
        self._tree = hierarchical(conf)
        self._gate = IdleGate()
        self._last_plan: Plan | None = None
        self.skipped = 0  # periods that ran no cycle (nothing changed, nothing due)
        self.held_back = 0  # periods that ran no cycle because binds were backlogged
        self._reported_members: tuple[str, ...] | None = None
        self._full_report_at = 0.0
        self._first_bind_at: float | None = None  # when the running cycle handed its first gang over
        self._unread = False  # the last cycle found the cache still reading its share's pods (ShareUnread)

    async def run(self, shutdown: asyncio.Event) -> None:
        try:
            await self._run(shutdown)
        finally:
            await self._publish()
            await self.peers.leave()  # what it claimed goes to the others now

    async def _run(self, shutdown: asyncio.Event) -> None:
        while not shutdown.is_set():
            started = self._clock()
            rest, leaving, waiting = MIN_GAP_S, None, False
            self.cache.changed.clear()
            if self.members.can_write():
                if self._binds_backlogged(started):
                    self.held_back += 1
                elif self._cycle_needed(started):
                    finished_before = self.work.finished("Gang") if self.work is not None else 0
                    result = await self._cycle(started)
                    await self._publish()
                    cycle_s = self._clock() - started
                    if result is not None and result.binds and self.work is not None:
                        written = self.work.finished("Gang") - finished_before
                        leaving = gangs_left_at_opening(written, cycle_s, self._first_bind_s(started, result))
                    rest = self._rest_after(cycle_s, paced=leaving is not None)
                    waiting = self._work_waiting()
                    if result is not None and result.binds and not self._gate.deferred and not waiting:
                        await self._prepare()
                else:
                    self.skipped += 1
            await self._wait_for_work(shutdown, started, rest, gangs_leaving=leaving, waiting=waiting)

    async def _publish(self) -> None:
        """What this instance's shards add up to, as far as it moved, for the other instances: after each
        cycle (which any change of its shards brings), and as it stops. Best effort: what fails is
        written at the next one."""
        if self._parts is not None and self.cache.holds(self._parts.shards):
            await self.peers.publish(self.cache.index, self._parts.shards)

    def _rest_after(self, cycle_s: float, *, paced: bool) -> float:
        """The rest after a cycle of `cycle_s`. One that found the share unread is followed by the next at
        once (it waited for the read already). So is one that deferred jobs unless its binds pace the next
        (`paced`: the rest ends once the binder has only its tail left, gangs_left_at_opening): a rest
        would only leave the backlog waiting. A backlog planned faster than the binder writes it would
        only queue binds the next cycles can no longer revise: at 100,000 pending pods a lone instance
        was 80,000 binds ahead of its binder, whose 19 s to write them any new job waited out, whatever
        its priority (docs/benchmarks.md, "Planning at the binder's pace")."""
        if self._unread or (self._gate.deferred and not paced):
            return MIN_GAP_S
        return rest_after(cycle_s)

    def _first_bind_s(self, started: float, result: CycleResult) -> float:
        """How long after its start the cycle begun at `started` handed its first gang to the binder (at
        least its opening)."""
        first = self._first_bind_at
        until = first - started if first is not None else self._clock() - started
        return max(until, result.stats.durations_s.get(OPEN, 0.0))

    def _work_waiting(self) -> bool:
        """Whether work for this instance arrived since the cache was last looked at (taking it)."""
        if not self.cache.changed.is_set():
            return False
        self.cache.changed.clear()
        return self._work_for_us()

    async def _prepare(self) -> None:
        """Bring the carried state to the share as the cycle left it, while the binder writes the
        cycle's binds (CarriedState.prepare): those binds, assumed in the cache, are most of what the
        next opening would patch, and the binder would have nothing to write meanwhile. Only when no new
        work waits: the next cycle then waits for some, and the prepare fills that time. With work
        waiting the next cycle starts as the binder's tail allows (gangs_left_at_opening), and a prepare
        before it only delays its first bind: at the seeds' scale a prepare took 8 s while the binder had
        9 s left to write, and the opening after it 7 s more (docs/benchmarks.md). (After a cycle that
        deferred jobs the next one opens at once: it patches them itself.)"""
        try:
            view = self._view()
            partition = await self._partition(view)
            if not self.cache.holds(partition.shards):
                return  # (the next cycle opens on what the cache reads meanwhile)
            snapshot, _ = self._share.snapshot(partition, self.peers.reserved(view))
            await asyncio.to_thread(self._carried.prepare, snapshot, SCHEDULER_NAMES)
        except Exception as exc:  # scheduling goes on; the next opening builds the state anew
            self._carried = CarriedState()
            log.error("cycle.prepare_failed", error=repr(exc), traceback=traceback.format_exc(limit=20))

    def _binds_backlogged(self, now: float) -> bool:
        """Too many gangs wait for the binder, and the last cycle started less than HOLD_BACK_MAX_S ago.
        A cycle longer than HOLD_BACK_MAX_S / 2 is followed by a rest that already spaces the next one
        further than that: the hold-back then never adds to it."""
        backlog = self.work is not None and self.work.unfinished("Gang") > BACKLOG_GANGS
        return backlog and self._gate.inputs is not None and now - self._gate.at < HOLD_BACK_MAX_S

    def _report_all(self, members: tuple[str, ...]) -> bool:
        """Every owned PodGroup's status, not only those that may have changed: on the first cycle, when
        the members change (PodGroups this instance did not report may be its own now), and at least
        every FULL_REPORT_S."""
        now = self._clock()
        members = tuple(members)
        if members != self._reported_members or now - self._full_report_at >= FULL_REPORT_S:
            self._reported_members, self._full_report_at = members, now
            return True
        return False

    def _inputs(self) -> Inputs:
        # The other shards' records count for the instance that exports the cluster's gauges, once those
        # are due (a cycle refreshes them): at most one cycle more per period, not one per record.
        parts, others = self._parts, self.cache.index.others
        exports = parts is not None and parts.owns(metrics.CLUSTER_GAUGES_KEY) and metrics.state_gauges_due()
        records = others.version if exports else 0
        members = tuple(self.members.members)
        return Inputs(self.cache.version, members, self.members.epoch, records, self.cache.quiet)

    def _cycle_needed(self, now: float) -> bool:
        return self._gate.needed(
            self._inputs(),
            ledger_changed=self.peers.changed(),
            now=now,
            wall=datetime.now(UTC),
            writer_due=self.statuses.next_due(),
        )

    async def _cycle(self, started: float) -> CycleResult | None:
        """Run a cycle; its result, None if it failed."""
        inputs = self._inputs()  # as the cycle reads them: a change from here on runs the next one
        self._unread = False
        self.peers.settle()
        try:
            result = await self.run_once()
        except ShareUnread as exc:  # the next cycle tries again at once (it waited for the read already)
            self._unread = True
            self._gate.ran(inputs, started, failed=True)
            log.info("cycle.share_unread", detail=str(exc))
            return None
        except Exception as exc:  # one bad cycle must not stop scheduling; the next one re-plans
            self._carried = CarriedState()  # on a state built anew: this one may be patched half-way
            self._gate.ran(inputs, started, failed=True)
            metrics.CYCLE_ERRORS.labels(self.instance).inc()
            log.error("cycle.failed", error=repr(exc), traceback=traceback.format_exc(limit=20))
            return None
        plan = self._last_plan
        by_reservation = plan.placed_by_reservation if plan is not None else 0
        self._gate.ran(
            inputs,
            started,
            failed=False,
            recheck_at=result.recheck_at,
            by_reservation=by_reservation,
            deferred=bool(result.deferred),
            pending=result.stats.tasks_pending > len(result.binds),
        )
        return result

    async def run_once(self) -> CycleResult:
        number = next(self.cycles)
        self._first_bind_at = None
        begun = self._clock()
        members = self.members
        self.cache.unseen_binds()  # binds never seen are given up: their pods show as last stored
        view = self._view()
        partition = await self._partition(view)
        if not await self.cache.until_holds(partition.shards, SHARE_READ_WAIT_S):
            raise ShareUnread(f"the cache holds the pods of {len(partition.shards)} shards only in part")
        reserved = self.peers.reserved(view)
        snapshot, by_reservation = self._share.snapshot(partition, reserved)
        taken = self._clock()  # the share's snapshot: a cycle's work before its session
        cycle = Cycle(
            snapshot,
            partition,
            f"{self.instance}-{number}",
            datetime.now(UTC),
            report_all=self._report_all(members.members),
            placed_by_reservation=by_reservation,
            bind_budget=bind_budget(self.binds_per_cycle, partition),
            held_out=self._share.held,
        )
        make_gangs = GangMaker(snapshot, view, tree=self._tree, nodes=self.cache.nodes, owns_node=partition.owns_node)

        def take(binds: tuple[Bind, ...]) -> None:
            self.cache.release()  # binds flow: the opening is over, the cache catches up meanwhile
            self._submit(make_gangs(binds))

        streamed = StreamedBinds(asyncio.get_running_loop(), take)
        # What the cache would apply while the session opens is not in its snapshot: the opening gets
        # the GIL instead (cache.HOLD_MAX_S).
        self.cache.hold()
        try:
            plan = await asyncio.to_thread(plan_cycle, cycle, self.conf, self._carried, time.perf_counter, streamed.put)
        finally:
            self.cache.release()
        streamed.drain()
        waiting: frozenset[str] = frozenset()
        if not partition.alone() and not plan.result.deferred:
            # (A cycle that deferred jobs borrows nothing: what it left may fit the share next cycle.)
            waiting = left_over(snapshot, plan.result.binds)
            if waiting and self._may_borrow():
                metrics.BORROWING.labels(self.instance).inc()
                free = await self.desk.free_on(partition.claims) if self.desk is not None else {}
                borrowing = self._share.borrowing(snapshot, partition, free)
                plan = await asyncio.to_thread(plan_borrowing, plan, borrowing, waiting, self.conf, cycle)
        # Changes outside the share wake this instance only while something of its share waits for room
        # it may borrow (alone, the share is everything).
        self.cache.follow_all = partition.alone() or bool(waiting)
        result = plan.result
        self.last = result
        self.last_view = view
        self._last_plan = plan
        self._record(plan, partition)
        if not members.can_write():
            return result  # the lease lapsed while we planned: another instance may own these now
        if plan.snapshot is not snapshot:  # the borrowing session's binds are planned on its own snapshot
            make_gangs = GangMaker(
                plan.snapshot, view, tree=self._tree, nodes=self.cache.nodes, owns_node=partition.owns_node
            )
        self._submit(make_gangs(streamed.rest(result.decisions)))
        for decision in result.decisions:
            if isinstance(decision, Evict):
                self.evictor.submit(decision)
        for update in result.podgroups.values():
            self.statuses.offer_podgroup(update)
        self.statuses.revisit()
        for queue in result.queues:
            self.statuses.offer_queue(queue)
        self._share.settle(snapshot)
        if result.decisions:
            log.info(
                "cycle.finished",
                cycle=number,
                binds=len(result.binds),
                evictions=len(result.evictions),
                pending=result.stats.tasks_pending,
                owned=plan.owned,
                held=cycle.held_out,
                members=len(members.members),
                duration_ms=round(result.stats.duration_s * 1000, 1),
                open_ms=round(result.stats.durations_s.get(OPEN, 0.0) * 1000, 1),
                snapshot_ms=round((taken - begun) * 1000, 1),
                first_bind_ms=None if self._first_bind_at is None else round((self._first_bind_at - begun) * 1000, 1),
                streamed=len(streamed.sent),
                **self._unwritten(),
            )
        return result

    def _unwritten(self) -> dict[str, int]:
        """The writes still queued or in flight, by kind (where the binds' pace went, in the cycle's log)."""
        if self.work is None:
            return {}
        return {
            "gangs_unwritten": self.work.unfinished("Gang"),
            "statuses_unwritten": self.work.unfinished("PodGroupStatus"),
            "queue_statuses_unwritten": self.work.unfinished("QueueStatus"),
        }

    def _submit(self, gangs: list[Gang]) -> None:
        """Hand gangs to the binder, unless the lease lapsed (another instance may own them now: they
        are not assumed, so whoever owns them plans them again)."""
        if not self.members.can_write():
            return
        if gangs and self._first_bind_at is None:
            self._first_bind_at = self._clock()
        for gang in gangs:
            self.binder.submit(gang)

    async def _partition(self, view: View) -> Partition:
        """Who owns what among the instances (peers.py); the cache's index recounts what lies outside the
        share when it changes."""
        parts = await self.peers.partition(tuple(self.members.members) or (self.instance,), view, self.cache.index)
        if parts is not self._parts:
            self._parts = parts
            self.cache.regroup(parts.owns, parts.owns_node, parts.shards)
        parts.bound(len(self.cache.podgroups) + len(self.cache.nodes) + len(self.cache.queues))
        return parts

    def _view(self) -> View:
        return self.cache.index.view(
            gone=self.cache.gone(),
            live=frozenset(self.members.members),
            instance=self.members.instance,
            epoch=self.members.epoch,
        )

    def _may_borrow(self) -> bool:
        """At most one borrowing session every BORROW_EVERY_S: it covers every node, and what waits
        because the whole cluster is full would otherwise pay for one each cycle."""
        now = self._clock()
        if now - self._borrowed_at < BORROW_EVERY_S:
            return False
        self._borrowed_at = now
        return True

    def _record(self, plan: Plan, partition: Partition) -> None:
        owned, members = plan.owned, len(self.members.members)
        cluster = self.cache.snapshot
        metrics.record_cycle(
            plan.result,
            plan.snapshot,
            cluster,
            instance=self.instance,
            owned=owned,
            members=members,
            whole=partition.owns(metrics.CLUSTER_GAUGES_KEY),
            index=self.cache.index,
            held=self.cache.index.held,
        )
        if not partition.alone():
            metrics.OWNED_NODES.labels(self.instance).set(
                sum(1 for n in plan.snapshot.nodes if partition.owns_node(n.name))
            )
            foreign = sum(1 for node in plan.result.binds.values() if not partition.owns_node(node))
            if foreign:
                metrics.FOREIGN_BINDS.labels(self.instance).inc(foreign)

    async def _wait_for_work(
        self,
        shutdown: asyncio.Event,
        started: float,
        rest: float,
        *,
        gangs_leaving: int | None = None,
        waiting: bool = False,
    ) -> None:
        """Rest `rest` seconds (shutdown or a change of members ends it, and with `gangs_leaving` the
        binder having at most that many gangs left to write), then, unless work is `waiting` already,
        sleep until the period is over or shutdown, or earlier when work for this instance arrives: resources freed, a
        node or queue changed, new demands of a PodGroup it owns (another instance's new pods wait for the
        period: that instance places them), or the members changed (PodGroups may have moved to it). While
        binds are backlogged, look again every MIN_GAP_S."""
        await self._rest(rest, shutdown, gangs_leaving=gangs_leaving)
        if shutdown.is_set() or waiting or self._gate.deferred or self._binds_backlogged(self._clock()):
            return
        deadline = started + self.period_s
        while not shutdown.is_set() and self._clock() < deadline:
            if self._work_waiting():
                return
            try:
                async with asyncio.timeout(max(0.0, deadline - self._clock())):
                    await wait_or_stop(self.cache.changed, shutdown)
            except TimeoutError:
                return

    async def _rest(self, seconds: float, shutdown: asyncio.Event, *, gangs_leaving: int | None = None) -> None:
        """Rest `seconds`; shutdown ends it, and so does a change of members: the rest spaces cycles out,
        and with several instances it lasts several cycles' time, which PodGroups an instance that left
        held (or a joining one takes) should not wait out. With `gangs_leaving` (the cycle bound pods), so
        does the binder having at most that many gangs left to write (gangs_left_at_opening): a longer
        rest only leaves the next pods waiting (at the seeds' scale rests as long as a cycle of 12-17 s
        were the longest stalls: docs/benchmarks.md)."""
        waits = [
            asyncio.ensure_future(self._sleep(seconds)),
            asyncio.ensure_future(shutdown.wait()),
            asyncio.ensure_future(self.members.wait_changed()),
        ]
        if gangs_leaving is not None and self.work is not None:
            waits.append(asyncio.ensure_future(self.work.carried_out("Gang", leaving=gangs_leaving)))
        resting = waits[0]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        if resting.done() and not resting.cancelled():
            resting.result()  # a sleep that raised says so (cancel() on a finished task would hide it)

    def _work_for_us(self) -> bool:
        demands, shared = self.cache.take_work()
        last, now = self._gate.inputs, self._inputs()
        moved = last is not None and (last.members, last.epoch) != (now.members, now.epoch)
        if shared or (moved and self.members.can_write()):
            return True
        members = tuple(self.members.members) or (self.instance,)
        parts = self._parts
        if parts is None or parts.members != members:
            parts = Partition(self.instance, members)  # the PodGroups it owns once it announces them
        return any(parts.owns(key) for key in demands)

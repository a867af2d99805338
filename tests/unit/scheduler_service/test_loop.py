"""The loop's shell logic without I/O: gangs grouped per PodGroup with what their reservations need,
status writes only when something changed, and a cycle's work handed to the binder and the writer."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from fractions import Fraction

import pytest

from tests.support.waiting import eventually
from tests.unit.scheduler_service.service_builders import group, node, offline_loop, pod
from vc_runtime.sharding import SoleOwner
from vc_sched_core.cycle import CycleResult, load_scheduler_conf
from vc_sched_core.framework.decisions import Bind, PodGroupStatusUpdate, QueueStatusUpdate
from vc_sched_core.snapshot.cluster import ClusterSnapshot, PodGroupCondition, QueueObj
from vc_scheduler import loop as loop_module
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang, gangs_of, hierarchical
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger import View
from vc_scheduler.loop import MIN_GAP_S, OPEN, SchedulingLoop, bind_budget, gangs_left_at_opening, rest_after
from vc_scheduler.share import Partition
from vc_scheduler.status_policy import (
    ALLOCATED_EVERY_S,
    BINDS_SEEN_S,
    COUNTS_EVERY_S,
    COUNTS_SETTLE_S,
    PODS_START_S,
)
from vc_scheduler.status_writer import StatusWriter

HIERARCHY_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: capacity
    enableHierarchy: true
"""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def writer_with(cache: SchedulerCache, clock: Clock) -> tuple[StatusWriter, InFlight]:
    work = InFlight("s0")
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    return StatusWriter(None, cache, events, ownership=SoleOwner("s0"), work=work, clock=clock), work  # type: ignore[arg-type]


def test_binds_are_grouped_per_podgroup_with_capacities_and_capped_queue() -> None:
    snap = ClusterSnapshot(
        nodes=(node("n1"), node("n2")),
        pods=(pod("a0", "a"), pod("a1", "a"), pod("b0", "b")),
        podgroups=(group("a", "capped", min_member=2), group("b", "open", min_member=2)),
        queues=(QueueObj(name="capped", capability={"cpu": Fraction(3)}), QueueObj(name="open")),
    )
    binds = (Bind("ns/a0", "uid-a0", "n1"), Bind("ns/a1", "uid-a1", "n2"), Bind("ns/b0", "uid-b0", "n1"))
    gangs = {g.podgroup: g for g in gangs_of(binds, snap, View(), tree=False)}
    assert set(gangs) == {"ns/a", "ns/b"}
    a, b = gangs["ns/a"], gangs["ns/b"]
    assert [x.pod for x in a.binds] == ["ns/a0", "ns/a1"]
    assert set(a.capacities) == {"n1", "n2"} and a.capacities["n1"]["pods"] == 10
    assert a.capped_queues == (("capped", {"cpu": Fraction(3)}),)
    assert b.capped_queues == () and a.requests["uid-a0"] == {"cpu": Fraction(1)}


def test_a_gang_is_reserved_on_every_capped_ancestor_of_its_queue() -> None:
    snap = ClusterSnapshot(
        nodes=(node("n1"),),
        pods=(pod("a0", "a"),),
        podgroups=(group("a", "leaf", min_member=1),),
        queues=(
            QueueObj(name="org", capability={"cpu": Fraction(8)}),
            QueueObj(name="team", parent="org"),  # no capability of its own: nothing to reserve
            QueueObj(name="leaf", parent="team", capability={"cpu": Fraction(2)}),
            QueueObj(name="root", capability={"cpu": Fraction(100)}),
        ),
    )
    binds = (Bind("ns/a0", "uid-a0", "n1"),)
    tree = hierarchical(load_scheduler_conf(HIERARCHY_CONF))
    assert tree
    (gang,) = gangs_of(binds, snap, View(), tree=tree)
    assert [name for name, _ in gang.capped_queues] == ["leaf", "org", "root"]
    # Without a queue tree in the conf (Volcano's default proportion) parents cap nothing.
    assert not hierarchical(load_scheduler_conf())
    (flat,) = gangs_of(binds, snap, View(), tree=False)
    assert [name for name, _ in flat.capped_queues] == ["leaf"]


def test_a_placed_gang_waits_for_its_binds_so_scheduled_and_running_make_one_write() -> None:
    """Placed whole, a gang says Scheduled at once but reads Running only once its binds are seen: the
    Scheduled condition waits for that phase change (up to BINDS_SEEN_S) and goes with it."""
    cache, clock = SchedulerCache(), Clock()
    cache.podgroups["ns/a"] = replace(group("a", "q", min_member=2), phase="Pending")
    writer, work = writer_with(cache, clock)
    missing = PodGroupCondition("Unschedulable", "True", "NotEnoughPodsOfTask", "pods missing", "s0-1")
    assert writer.offer_podgroup(PodGroupStatusUpdate("ns/a", "Inqueue", (missing,), 0, 0, 0))  # enqueued: at once
    scheduled = PodGroupCondition("Scheduled", "True", "tasks in gang are ready to be scheduled", "", "s0-2")
    placed = PodGroupStatusUpdate("ns/a", "Inqueue", (missing, scheduled), 0, 0, 0)
    clock.now += 2 * COUNTS_EVERY_S  # past the spacing an ordinary condition change waits
    assert not writer.offer_podgroup(placed)
    clock.now += BINDS_SEEN_S / 2
    assert not writer.offer_podgroup(placed)
    # The binds are seen: Running, but its pods are still starting: that waits too (PODS_START_S) ...
    bound = replace(placed, phase="Running")
    assert not writer.offer_podgroup(bound)
    clock.now += PODS_START_S / 2
    assert not writer.offer_podgroup(replace(bound, running=1))
    # ... until minMember of them run (or have finished): Running, the Scheduled condition and the counts
    # in one write.
    assert writer.offer_podgroup(replace(bound, running=1, succeeded=1))
    assert work.backlog == 1


def test_a_bound_gang_whose_pods_do_not_start_reads_running_after_pods_start_s() -> None:
    cache, clock = SchedulerCache(), Clock()
    cache.podgroups["ns/a"] = replace(group("a", "q", min_member=2), phase="Pending")
    writer, _ = writer_with(cache, clock)
    assert writer.offer_podgroup(PodGroupStatusUpdate("ns/a", "Inqueue", (), 0, 0, 0))
    bound = PodGroupStatusUpdate("ns/a", "Running", (), 1, 0, 0)
    assert not writer.offer_podgroup(bound)
    clock.now += PODS_START_S - 0.1
    assert not writer.offer_podgroup(bound)
    clock.now += 0.1
    assert writer.offer_podgroup(bound)
    # Other phase changes are written at once (Running -> Completed).
    clock.now += 1
    assert writer.offer_podgroup(replace(bound, phase="Completed", running=0, succeeded=2))


def test_a_scheduled_condition_whose_binds_are_never_seen_is_written_after_binds_seen_s() -> None:
    cache, clock = SchedulerCache(), Clock()
    cache.podgroups["ns/a"] = replace(group("a", "q", min_member=2), phase="Pending")
    writer, _ = writer_with(cache, clock)
    assert writer.offer_podgroup(PodGroupStatusUpdate("ns/a", "Inqueue", (), 0, 0, 0))
    scheduled = PodGroupCondition("Scheduled", "True", "tasks in gang are ready to be scheduled", "", "s0-2")
    placed = PodGroupStatusUpdate("ns/a", "Inqueue", (scheduled,), 0, 0, 0)
    assert not writer.offer_podgroup(placed)
    clock.now += BINDS_SEEN_S - 0.1
    assert not writer.offer_podgroup(placed)
    clock.now += 0.1
    assert writer.offer_podgroup(placed)
    # Any other condition change on an Inqueue PodGroup is spaced as before, not held for the binds.
    other = PodGroupCondition("Unschedulable", "True", "NotEnoughResources", "short of cpu", "s0-3")
    clock.now += COUNTS_EVERY_S
    assert not writer.offer_podgroup(replace(placed, conditions=(scheduled, other)))
    clock.now += COUNTS_SETTLE_S
    assert writer.offer_podgroup(replace(placed, conditions=(scheduled, other)))


def test_a_status_is_sent_once_until_it_changes() -> None:
    cache, clock = SchedulerCache(), Clock()
    cache.podgroups["ns/a"] = group("a", "q", min_member=2)
    writer, work = writer_with(cache, clock)
    cond = PodGroupCondition("Scheduled", "True", "tasks in gang are ready to be scheduled", "", "s0-1")
    update = PodGroupStatusUpdate("ns/a", "Running", (cond,), 2, 0, 0)
    assert writer.offer_podgroup(update)
    # Next cycle: the same status under a new session's transition id; the store has not caught up.
    assert not writer.offer_podgroup(replace(update, conditions=(replace(cond, transition_id="s0-2"),)))
    # The store caught up (it keeps conditions the update does not mention).
    cache.podgroups["ns/a"] = replace(
        group("a", "q", min_member=2),
        phase="Running",
        conditions=(replace(cond, transition_id=""), PodGroupCondition("Unschedulable", "True")),
    )
    assert not writer.offer_podgroup(update)
    # Only a pod count moved: held back for COUNTS_EVERY_S, so a gang's pods starting make one write.
    assert not writer.offer_podgroup(replace(update, running=1))
    clock.now += COUNTS_EVERY_S
    assert writer.offer_podgroup(replace(update, running=1))
    # Long after that write, a count moving first waits COUNTS_SETTLE_S for the rest of its burst:
    # the gang's next pods starting join the same write.
    clock.now += 10 * COUNTS_EVERY_S
    assert not writer.offer_podgroup(replace(update, running=2))
    clock.now += COUNTS_SETTLE_S / 2
    assert not writer.offer_podgroup(replace(update, running=2))
    clock.now += COUNTS_SETTLE_S / 2
    assert writer.offer_podgroup(replace(update, running=2))
    # A condition changing (a why-message counting pods, or a new condition) waits the same way.
    recounted = replace(cond, message="3/10 tasks in gang unschedulable")
    assert not writer.offer_podgroup(replace(update, running=2, conditions=(recounted,)))
    unschedulable = PodGroupCondition("Unschedulable", "True", "NotEnoughPods", "", "s0-3")
    assert not writer.offer_podgroup(replace(update, running=2, conditions=(recounted, unschedulable)))
    # A phase change is never held back.
    assert writer.offer_podgroup(replace(update, phase="Completed", running=0, succeeded=2))
    # The three statuses found due coalesced into the one write still waiting for its turn.
    assert work.backlog == 1


def test_queue_allocated_is_sent_when_it_changes_at_most_every_second() -> None:
    cache, clock = SchedulerCache(), Clock()
    cache.queues["default"] = QueueObj(name="default")
    writer, work = writer_with(cache, clock)
    update = QueueStatusUpdate("default", {"cpu": "2"})
    assert writer.offer_queue(update)
    assert not writer.offer_queue(update)  # unchanged
    assert not writer.offer_queue(QueueStatusUpdate("default", {"cpu": "3"}))  # changed, but too soon
    clock.now += ALLOCATED_EVERY_S
    assert writer.offer_queue(QueueStatusUpdate("default", {"cpu": "3"}))
    assert not writer.offer_queue(QueueStatusUpdate("gone", {"cpu": "1"}))  # no such queue
    assert work.backlog == 1


def cache_with_one_gang() -> SchedulerCache:
    """One node, the default queue and a pending gang of two that fits it."""
    cache = SchedulerCache()
    cache.nodes["n1"] = node("n1")
    cache.queues["default"] = QueueObj(name="default")
    cache.podgroups["ns/a"] = group("a", min_member=2)
    for name in ("a0", "a1"):
        cache.pods[f"ns/{name}"] = pod(name, "a")
    return cache


def test_a_cycle_assumes_its_binds_and_hands_gangs_and_statuses_over_without_waiting() -> None:
    async def scenario() -> None:
        cache = cache_with_one_gang()
        work = InFlight("s0")
        loop = offline_loop(cache, work=work)
        result = await loop.run_once()
        assert set(result.binds) == {"ns/a0", "ns/a1"}
        assert cache.assumed() == {"ns/a0", "ns/a1"}  # the next cycle will not place them again
        # Nothing was written yet: the gang and the queue's figure wait their turn; the PodGroup's first
        # status keeps its phase (Inqueue until the binds are seen), so it waits COUNTS_EVERY_S.
        assert work.backlog == 2
        again = await loop.run_once()
        assert again.binds == {}

    asyncio.run(scenario())


def test_status_writes_go_before_queued_gangs() -> None:
    """One job at a time: a PodGroup's status written after a backlog of gangs still goes first (the job
    controller waits on it), then the gangs in the order submitted."""

    async def scenario() -> None:
        work, done = InFlight("s0", limit=1), []

        def job(name: str):  # type: ignore[no-untyped-def]
            async def run() -> None:
                done.append(name)

            return run

        for kind, name in (("Gang", "g1"), ("Gang", "g2"), ("PodGroupStatus", "s1"), ("Evict", "e1")):
            work.submit(kind, job(name))
        assert work.unfinished("Gang") == 2
        shutdown = asyncio.Event()
        shutdown.set()  # the runner still carries out what was submitted before it stops
        await work.run(shutdown)
        assert done == ["s1", "g1", "g2", "e1"] and work.unfinished("Gang") == 0

    asyncio.run(scenario())


def test_statuses_hold_at_most_three_quarters_of_the_slots_while_gangs_wait() -> None:
    """A burst of status writes (a cycle enqueuing thousands of PodGroups) holds no gang back until the
    last of them has started: while gangs wait, statuses take three of four slots; alone, all of them."""

    async def scenario() -> None:
        work, release, four, started = InFlight("s0", limit=4), asyncio.Event(), asyncio.Event(), []

        def job(name: str):  # type: ignore[no-untyped-def]
            async def run() -> None:
                started.append(name)
                if len(started) == 4:
                    four.set()
                await release.wait()

            return run

        for i in range(10):
            work.submit("PodGroupStatus", job(f"s{i}"))
        for i in range(2):
            work.submit("Gang", job(f"g{i}"))
        shutdown = asyncio.Event()
        runner = asyncio.create_task(work.run(shutdown))
        await four.wait()
        await asyncio.sleep(0.01)  # no fifth job starts while these four hold the slots
        assert started == ["s0", "s1", "s2", "g0"]
        release.set()
        shutdown.set()
        await runner
        assert started[4:] == ["s3", "s4", "s5", "g1", *(f"s{i}" for i in range(6, 10))]
        assert work.unfinished("PodGroupStatus") == 0

    asyncio.run(scenario())


def test_statuses_alone_take_every_slot() -> None:
    async def scenario() -> None:
        work, release, four, started = InFlight("s0", limit=4), asyncio.Event(), asyncio.Event(), []

        async def run() -> None:
            started.append(1)
            if len(started) == 4:
                four.set()
            await release.wait()

        for _ in range(6):
            work.submit("PodGroupStatus", run)
        shutdown = asyncio.Event()
        runner = asyncio.create_task(work.run(shutdown))
        await four.wait()
        await asyncio.sleep(0.01)
        assert work.in_flight == 4 and work.backlog == 6
        release.set()
        shutdown.set()
        await runner
        assert work.unfinished("PodGroupStatus") == 0

    asyncio.run(scenario())


@pytest.mark.parametrize("members", [("s0",), ("s0", "s1")])
def test_after_a_cycle_the_loop_rests_as_long_as_the_cycle_took_however_many_instances(
    members: tuple[str, ...],
) -> None:
    """A cycle plans holding the GIL: the loop leaves the binder, the cache and the other services at
    least as much time as the cycle took before it starts another, alone or among other instances (each
    plans over its own share). A period that ran no cycle, or a cycle shorter than MIN_GAP_S, rests
    MIN_GAP_S."""

    async def scenario() -> None:
        clock, rests, shutdown = Clock(), [], asyncio.Event()
        owner = SoleOwner("s0")
        owner.members = members

        async def sleep(seconds: float) -> None:
            rests.append(seconds)
            clock.now += seconds
            if len(rests) == 2:
                shutdown.set()

        loop = offline_loop(cache_with_one_gang(), period_s=0.5, members=owner, clock=clock, sleep=sleep)
        plan = loop.run_once

        async def slow_cycle() -> CycleResult:
            result = await plan()
            clock.now += 0.4  # the cycle took 0.4 s
            return result

        loop.run_once = slow_cycle  # type: ignore[method-assign]
        await loop.run(shutdown)
        assert loop.skipped == 1  # the second period had nothing new to plan
        assert rests == [pytest.approx(0.4), MIN_GAP_S]

    asyncio.run(scenario())


def test_carried_out_waits_for_every_job_of_its_kind_submitted_until_then() -> None:
    async def scenario() -> None:
        work, shutdown, gate = InFlight("s0"), asyncio.Event(), asyncio.Event()
        await work.carried_out("Gang")  # none submitted: nothing to wait for

        async def gang() -> None:
            await gate.wait()

        work.submit("Gang", gang)
        work.submit("PodGroupStatus", lambda: asyncio.sleep(0))
        runner = asyncio.create_task(work.run(shutdown))
        waiting = asyncio.create_task(work.carried_out("Gang"))
        await asyncio.sleep(0.05)
        work.submit("Gang", gang)  # submitted while it waits: waited for too
        await asyncio.sleep(0.05)
        assert not waiting.done() and work.unfinished("PodGroupStatus") == 0
        gate.set()
        await asyncio.wait_for(waiting, 10)  # a bound for a broken build, not a measurement
        assert work.unfinished("Gang") == 0
        shutdown.set()
        await asyncio.wait_for(runner, 10)

    asyncio.run(scenario())


def resting_loop(
    cache: SchedulerCache, work: InFlight, rests: list[float], rested_again: asyncio.Event | None = None
) -> SchedulingLoop:
    """A loop over `cache` handing its writes to `work`, whose rests never end by themselves (each is
    recorded in `rests`; the second sets `rested_again`)."""

    async def sleep(seconds: float) -> None:
        rests.append(seconds)
        if len(rests) == 2 and rested_again is not None:
            rested_again.set()
        await asyncio.Event().wait()

    return offline_loop(cache, period_s=0.05, work=work, sleep=sleep)


def test_after_a_cycle_that_bound_pods_the_rest_ends_once_the_binder_has_written_them() -> None:
    """A long cycle is followed by a rest as long as it took, but once its binds are written nothing of
    this instance's flows: the rest ends then, and the loop looks for work again."""

    async def scenario() -> None:
        work, shutdown, written, rested_again, rests = InFlight("s0"), *(asyncio.Event() for _ in range(3)), []
        loop = resting_loop(cache_with_one_gang(), work, rests, rested_again)

        async def bind() -> None:
            await written.wait()

        loop.binder.submit = lambda gang: work.submit("Gang", bind)  # type: ignore[method-assign]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.sleep(0.2)  # several periods
        assert len(rests) == 1 and loop.skipped == 0  # resting after the cycle, its gang not written yet
        written.set()
        await asyncio.wait_for(rested_again.wait(), 10)  # a bound for a broken build, not a measurement
        assert loop.skipped == 1  # past the rest: the next period found nothing new to plan
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_carried_out_leaving_some_waits_until_no_more_are_unfinished() -> None:
    async def scenario() -> None:
        work, shutdown, gates = InFlight("s0"), asyncio.Event(), [asyncio.Event() for _ in range(3)]
        for gate in gates:
            work.submit("Gang", gate.wait)
        await work.carried_out("Gang", leaving=3)  # three unfinished: nothing to wait for
        runner = asyncio.create_task(work.run(shutdown))
        waiting = asyncio.create_task(work.carried_out("Gang", leaving=1))
        gates[0].set()
        await asyncio.sleep(0.05)
        assert not waiting.done() and work.finished("Gang") == 1
        gates[1].set()
        await asyncio.wait_for(waiting, 10)  # a bound for a broken build, not a measurement
        assert work.unfinished("Gang") == 1 and work.finished("Gang") == 2
        gates[2].set()
        shutdown.set()
        await asyncio.wait_for(runner, 10)

    asyncio.run(scenario())


def test_the_binder_may_have_left_what_it_writes_until_a_cycle_binds() -> None:
    # 400 gangs written over a 20 s cycle that bound first after 8 s: 160 are written before the next binds.
    assert gangs_left_at_opening(400, cycle_s=20.0, first_bind_s=8.0) == 160
    assert gangs_left_at_opening(0, cycle_s=20.0, first_bind_s=8.0) == 0  # a binder that wrote nothing: wait
    assert gangs_left_at_opening(5, cycle_s=0.0, first_bind_s=0.0) == 0


def test_the_binders_tail_is_reckoned_to_the_cycles_first_bind_not_its_opening() -> None:
    """A cycle spends more than its opening before it binds (enqueueing, ordering the jobs): the binder
    must have that much left when the next one starts, or it waits idle for the next cycle's first bind."""

    async def scenario() -> None:
        clock, work, shutdown, rested_again, rests = Clock(), InFlight("s0"), asyncio.Event(), asyncio.Event(), []

        resting = asyncio.Event()

        async def sleep(seconds: float) -> None:
            rests.append(seconds)
            resting.set()
            if len(rests) == 2:
                rested_again.set()
            await asyncio.Event().wait()  # rests never end by themselves

        loop = offline_loop(cache_with_one_gang(), period_s=0.05, work=work, clock=clock, sleep=sleep)
        plan, earlier = loop.run_once, [asyncio.Event(), asyncio.Event()]

        async def cycle_binding_late() -> CycleResult:
            if rests:
                return await plan()  # (any cycle after the first: as it is)
            for _ in range(4):  # the binder writes four earlier gangs while this cycle runs...
                work.submit("Gang", lambda: asyncio.sleep(0))
            await work.carried_out("Gang")
            for gate in earlier:  # ...and has two more to write
                work.submit("Gang", gate.wait)
            clock.now += 10.0  # the opening is quick, but its first bind comes 10 s after the start...
            result = await plan()
            clock.now += 10.0  # ...of a 20 s cycle
            return replace(result, stats=replace(result.stats, durations_s={OPEN: 0.001}))

        loop.run_once = cycle_binding_late  # type: ignore[method-assign]
        held = asyncio.Event()
        loop.binder.submit = lambda gang: work.submit("Gang", held.wait)  # type: ignore[method-assign]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(resting.wait(), 10)  # a bound for a broken build, not a measurement
        assert work.unfinished("Gang") == 3 and not rested_again.is_set()
        earlier[0].set()  # two left: what the binder writes in the 10 s until the next cycle binds (4 x 10/20)
        await asyncio.wait_for(rested_again.wait(), 10)  # a bound for a broken build, not a measurement
        assert work.finished("Gang") == 5  # the rest ended with the cycle's gang and one earlier unwritten
        earlier[1].set()
        held.set()
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_after_a_cycle_that_bound_pods_the_next_opens_while_the_binder_writes_its_tail() -> None:
    """Gangs written while the cycle ran give the binder's pace: with as many left as it writes while a
    cycle opens, the rest ends and the next cycle opens over the binder's tail."""

    async def scenario() -> None:
        work, shutdown, written, rested_again, rests = InFlight("s0"), *(asyncio.Event() for _ in range(3)), []
        loop = resting_loop(cache_with_one_gang(), work, rests, rested_again)

        async def bind() -> None:
            await written.wait()

        plan = loop.run_once

        async def long_opening_cycle() -> CycleResult:
            for _ in range(4):  # the binder writes four earlier gangs while this cycle runs
                work.submit("Gang", lambda: asyncio.sleep(0))
            await work.carried_out("Gang")
            result = await plan()
            return replace(result, stats=replace(result.stats, durations_s={OPEN: 3600.0}))

        loop.run_once = long_opening_cycle  # type: ignore[method-assign]
        loop.binder.submit = lambda gang: work.submit("Gang", bind)  # type: ignore[method-assign]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(rested_again.wait(), 10)  # a bound for a broken build, not a measurement
        assert work.unfinished("Gang") == 1  # the cycle's own gang is not written, and the rest is over
        written.set()
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_a_cycle_that_deferred_jobs_is_followed_by_the_next_once_its_binder_is_down_to_its_tail() -> None:
    """A backlog larger than the bind budget is planned at the pace its binds are written: after a long
    cycle that deferred jobs the loop rests as long as the cycle took (not at once, as when nothing
    paces it), and the binder having written the cycle's binds ends that rest: the next cycle places
    what was deferred."""

    async def scenario() -> None:
        clock, rests, written, shutdown = Clock(), [], asyncio.Event(), asyncio.Event()
        cache = SchedulerCache()
        cache.nodes["n1"] = node("n1")
        cache.queues["default"] = QueueObj(name="default")
        for name in ("a", "b"):
            cache.podgroups[f"ns/{name}"] = group(name, min_member=1)
            cache.pods[f"ns/{name}0"] = pod(f"{name}0", name)

        async def sleep(seconds: float) -> None:  # a rest only the binder or shutdown ends
            rests.append(seconds)
            await asyncio.Event().wait()

        work = InFlight("s0")
        loop = offline_loop(cache, period_s=0.2, work=work, clock=clock, sleep=sleep, binds_per_cycle=1)
        plan, results = loop.run_once, []

        async def slow_cycle() -> CycleResult:
            results.append(await plan())
            clock.now += 0.4  # the cycle took 0.4 s
            return results[-1]

        async def bind() -> None:
            await written.wait()

        def submit(gang: Gang) -> None:  # assumed, as the binder does, and written when `written` is set
            for one in gang.binds:
                cache.assume(one.pod, one.node)
            work.submit("Gang", bind)

        loop.run_once = slow_cycle  # type: ignore[method-assign]
        loop.binder.submit = submit  # type: ignore[method-assign]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await eventually(lambda: rests, interval=0.01, what="the rest after the first cycle")
        await asyncio.sleep(0.05)
        assert len(results) == 1 and results[0].deferred  # b waits while the binder writes a's bind
        assert rests == [pytest.approx(0.4)]
        written.set()
        await eventually(lambda: len(results) >= 2, interval=0.01, what="the next cycle")
        assert set(results[1].binds) == {"ns/b0"}
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)  # a bound for a broken build

    asyncio.run(scenario())


def test_after_a_cycle_that_bound_nothing_the_rest_is_as_long_as_the_cycle() -> None:
    """With nothing to write (a gang that cannot be placed), the binder being idle does not end the rest:
    otherwise a cluster with unplaceable work would plan back to back on every change."""

    async def scenario() -> None:
        cache = cache_with_one_gang()
        cache.podgroups["ns/a"] = group("a", min_member=3)  # two pods of three: never placed
        work, shutdown, rests = InFlight("s0"), asyncio.Event(), []
        loop = resting_loop(cache, work, rests)
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.sleep(0.2)  # several periods
        cache.version += 1
        cache.changed.set()  # something new to plan, were the rest over
        await asyncio.sleep(0.2)
        assert next(loop.cycles) == 2 and len(rests) == 1 and loop.skipped == 0
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_rest_after_a_cycle() -> None:
    assert rest_after(0.01) == MIN_GAP_S and rest_after(1.5) == 1.5


def test_shutdown_ends_the_rest() -> None:
    """A long rest (a long cycle's) does not hold a stopping scheduler."""

    async def scenario() -> None:
        shutdown, resting = asyncio.Event(), asyncio.Event()

        async def sleep(seconds: float) -> None:
            resting.set()
            await asyncio.Event().wait()  # a rest that would never end by itself

        loop = offline_loop(cache_with_one_gang(), sleep=sleep)
        running = asyncio.create_task(loop.run(shutdown))
        await resting.wait()
        shutdown.set()
        await asyncio.wait_for(running, 10)  # a bound for a broken build, not a measurement

    asyncio.run(scenario())


def test_a_change_of_members_wakes_the_loop_before_the_period_ends() -> None:
    """Ownership moved (follow_membership sets cache.changed): PodGroups may now be this instance's, so
    the loop plans again after its rest instead of waiting out the period."""

    async def scenario() -> None:
        cache, owner, shutdown, rests = cache_with_one_gang(), SoleOwner("s0"), asyncio.Event(), []

        async def sleep(seconds: float) -> None:
            rests.append(seconds)
            if len(rests) == 1:
                owner.members, owner.epoch = ("s0", "s1"), owner.epoch + 1
                cache.changed.set()
            else:
                shutdown.set()

        loop = offline_loop(cache, period_s=3600.0, members=owner, sleep=sleep)
        await asyncio.wait_for(loop.run(shutdown), 10)  # a bound for a broken build: the period is an hour
        assert next(loop.cycles) == 3  # two cycles ran, the second for the new members

    asyncio.run(scenario())


def test_a_change_of_members_ends_the_rest() -> None:
    """With several instances the rest lasts several cycles' time: a member that leaves (or joins) must
    not wait it out before its PodGroups are planned by the others."""

    class Owner(SoleOwner):
        def __init__(self, instance: str) -> None:
            super().__init__(instance)
            self.moved = asyncio.Event()

        async def wait_changed(self) -> None:
            self.moved.clear()
            await self.moved.wait()

    async def scenario() -> None:
        cache, owner, shutdown, resting, cycled = (
            cache_with_one_gang(),
            Owner("s0"),
            *(asyncio.Event() for _ in range(3)),
        )
        owner.members = ("s0", "s1")

        async def sleep(seconds: float) -> None:
            resting.set()
            await asyncio.Event().wait()  # a rest that would never end by itself

        loop = offline_loop(cache, period_s=3600.0, members=owner, sleep=sleep)
        plan, cycles = loop.run_once, []

        async def counted() -> CycleResult:
            cycles.append(tuple(owner.members))
            if len(cycles) == 2:
                cycled.set()
            return await plan()

        loop.run_once = counted  # type: ignore[method-assign]
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(resting.wait(), 10)
        owner.members, owner.epoch = ("s0",), owner.epoch + 1  # s1 left: its PodGroups are s0's now
        cache.changed.set()  # as follow_membership does
        owner.moved.set()
        await asyncio.wait_for(cycled.wait(), 10)  # a bound for a broken build: the rest never ends
        assert cycles == [("s0", "s1"), ("s0",)]
        shutdown.set()
        await asyncio.wait_for(running, 10)

    asyncio.run(scenario())


def test_a_change_of_members_wakes_only_an_instance_that_may_write() -> None:
    """An instance whose lease lapsed runs no cycle, so its gate never catches up with the new members:
    waking it for them would only spin the loop until it re-joins."""

    class Owner(SoleOwner):
        writable = True

        def can_write(self) -> bool:
            return self.writable

    async def scenario() -> None:
        owner = Owner("s0")
        loop = offline_loop(cache_with_one_gang(), members=owner)
        await loop._cycle(0.0)
        assert not loop._work_for_us()
        owner.members, owner.epoch = ("s0", "s1"), owner.epoch + 1
        owner.writable = False
        assert not loop._work_for_us()
        owner.writable = True
        assert loop._work_for_us()

    asyncio.run(scenario())


def first_rest_loop(cache: SchedulerCache, work: InFlight, rests: list[float], rested: asyncio.Event) -> SchedulingLoop:
    """resting_loop, with `rested` set as the first rest begins."""
    loop = resting_loop(cache, work, rests)
    sleep = loop._sleep

    async def first(seconds: float) -> None:
        rested.set()
        await sleep(seconds)

    loop._sleep = first
    return loop


def test_after_a_cycle_that_bound_pods_the_carried_state_takes_its_binds_before_the_rest() -> None:
    """The next opening would patch the cycle's own binds (assumed in the cache) while the binder has
    nothing left to write: they are brought into the carried state as the rest begins instead."""

    async def scenario() -> None:
        work, shutdown, rested, rests, prepared = InFlight("s0"), asyncio.Event(), asyncio.Event(), [], []
        loop = first_rest_loop(cache_with_one_gang(), work, rests, rested)
        prepare = loop._carried.prepare

        def recording(snapshot: ClusterSnapshot, names: tuple[str, ...]) -> None:
            prepared.append((len(rests), {p.name: p.node_name for p in snapshot.pods}))
            prepare(snapshot, names)

        loop._carried.prepare = recording  # type: ignore[method-assign]
        loop.binder.commit = lambda gang, epoch: shutdown.wait()  # type: ignore[assignment,method-assign,return-value]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(rested.wait(), 10)  # a bound for a broken build, not a measurement
        assert prepared[0] == (0, {"a0": "n1", "a1": "n1"})  # before the first rest, the binds assumed
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_with_new_work_waiting_after_a_cycle_the_next_starts_as_the_binders_tail_allows_unprepared() -> None:
    """Pods that arrived during the cycle are the next cycle's work: it starts once the binder has as much
    left as it writes before that cycle binds, and a prepare first would only delay its binds (the binder
    idle meanwhile). The cycle after it runs at once, not after the period."""

    async def scenario() -> None:
        work, shutdown, rested, rests, prepared = InFlight("s0"), asyncio.Event(), asyncio.Event(), [], []
        cache = cache_with_one_gang()
        loop = first_rest_loop(cache, work, rests, rested)
        loop.period_s = 3600.0
        loop._carried.prepare = lambda *_: prepared.append(len(cycles))  # type: ignore[method-assign]
        plan, cycles, second = loop.run_once, [], asyncio.Event()

        async def cycle_with_arrivals() -> CycleResult:
            result = await plan()
            cycles.append(result)
            if len(cycles) == 2:
                second.set()
            if len(cycles) == 1:  # a new gang arrives while the first cycle plans
                cache.podgroups["ns/b"] = group("b", min_member=1)
                cache.pods["ns/b0"] = pod("b0", "b")
                cache.version += 1
                cache.demands.add("ns/b")
                cache.changed.set()
            return result

        loop.run_once = cycle_with_arrivals  # type: ignore[method-assign]
        runner = asyncio.create_task(work.run(shutdown))  # the binder writes (to no store) at once
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(rested.wait(), 10)  # a bound for a broken build, not a measurement
        await asyncio.wait_for(second.wait(), 10)  # a bound for a broken build, not a measurement
        assert "ns/b0" in cycles[1].binds  # the next cycle ran within the hour-long period
        assert 1 not in prepared  # nothing prepared after the first cycle: work was waiting
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_after_a_cycle_that_bound_nothing_the_carried_state_waits_for_the_next_opening() -> None:
    async def scenario() -> None:
        cache = cache_with_one_gang()
        cache.podgroups["ns/a"] = group("a", min_member=3)  # two pods of three: never placed
        work, shutdown, rested, rests = InFlight("s0"), asyncio.Event(), asyncio.Event(), []
        loop = first_rest_loop(cache, work, rests, rested)
        loop._carried.prepare = lambda *_: pytest.fail("prepared after a cycle that bound nothing")  # type: ignore[method-assign]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(rested.wait(), 10)  # a bound for a broken build, not a measurement
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_a_failure_bringing_the_carried_state_up_to_date_leaves_scheduling_on_a_fresh_state() -> None:
    """A state that failed half-way through a patch could decide wrongly ever after: the loop drops it
    (the next opening builds anew) and goes on to its rest."""

    async def scenario() -> None:
        work, shutdown, rested, rests = InFlight("s0"), asyncio.Event(), asyncio.Event(), []
        loop = first_rest_loop(cache_with_one_gang(), work, rests, rested)
        broken = loop._carried

        def fail(*_: object) -> None:
            raise RuntimeError("half-way")

        broken.prepare = fail  # type: ignore[method-assign]
        loop.binder.commit = lambda gang, epoch: shutdown.wait()  # type: ignore[assignment,method-assign,return-value]
        runner = asyncio.create_task(work.run(shutdown))
        running = asyncio.create_task(loop.run(shutdown))
        await asyncio.wait_for(rested.wait(), 10)  # a bound for a broken build, not a measurement
        assert loop._carried is not broken and not running.done()
        shutdown.set()
        await asyncio.wait_for(asyncio.gather(running, runner), 10)

    asyncio.run(scenario())


def test_the_cycle_log_says_when_the_cycle_took_its_snapshot_and_handed_its_first_gang_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a cycle does before its first bind is what the binder's tail must cover (gangs_left_at_opening)."""
    logged: list[tuple[str, dict[str, object]]] = []

    class Recording:
        def info(self, event: str, **fields: object) -> None:
            logged.append((event, fields))

    monkeypatch.setattr(loop_module, "log", Recording())
    clock = Clock()
    loop = offline_loop(cache_with_one_gang(), clock=clock)
    share = loop._share.snapshot

    def slow_snapshot(*args: object) -> object:
        clock.now += 2.0
        return share(*args)  # type: ignore[arg-type]

    loop._share.snapshot = slow_snapshot  # type: ignore[assignment,method-assign]
    submit = loop._submit

    def later(gangs: list[Gang]) -> None:
        clock.now += 3.0
        submit(gangs)

    loop._submit = later  # type: ignore[method-assign]
    asyncio.run(loop.run_once())
    (finished,) = [fields for event, fields in logged if event == "cycle.finished"]
    assert finished["snapshot_ms"] == 2000.0 and finished["first_bind_ms"] == 5000.0


def test_the_cycle_log_counts_each_kind_of_write_still_waiting() -> None:
    work = InFlight("s0")
    loop = offline_loop(cache_with_one_gang(), work=work)
    for kind in ("Gang", "Gang", "PodGroupStatus", "QueueStatus"):
        work.submit(kind, lambda: asyncio.sleep(0))
    assert loop._unwritten() == {"gangs_unwritten": 2, "statuses_unwritten": 1, "queue_statuses_unwritten": 1}


def test_a_cycle_that_failed_leaves_the_next_one_a_state_built_anew() -> None:
    """A session that raised may have left its carried state patched half-way: the next cycle does not
    open on it."""

    async def scenario() -> None:
        loop = offline_loop(cache_with_one_gang())
        broken = loop._carried

        async def failing() -> CycleResult:
            raise RuntimeError("half-way")

        loop.run_once = failing  # type: ignore[method-assign]
        assert await loop._cycle(loop._clock()) is None
        assert loop._carried is not broken

    asyncio.run(scenario())


def test_each_instance_s_cycle_decides_its_shards_part_of_the_bound() -> None:
    alone = Partition("a", ("a",))
    assert bind_budget(20_000, alone) == 20_000 and bind_budget(None, alone) is None
    four = ("a", "b", "c", "d")
    budgets = [bind_budget(20_000, Partition(m, four)) for m in four]
    assert budgets == [5_000] * 4
    three = ("a", "b", "c")
    assert sum(bind_budget(20_000, Partition(m, three)) or 0 for m in three) >= 20_000
    assert (bind_budget(10, Partition("z", (*(f"m{i}" for i in range(100)), "z"))) or 0) >= 1


def test_an_idle_loop_stops_at_shutdown_without_waiting_out_its_period() -> None:
    """With nothing to do the loop sleeps until the period ends or work arrives; a shutdown ends that
    sleep too (an hour's --schedule-period would otherwise hold the stop for up to an hour)."""

    async def scenario() -> None:
        cache = SchedulerCache()
        cache.nodes["n1"] = node("n1")
        cache.queues["default"] = QueueObj(name="default")
        loop = offline_loop(cache, period_s=3600.0)
        shutdown = asyncio.Event()
        runner = asyncio.create_task(loop.run(shutdown))
        await eventually(lambda: loop.last is not None, interval=0.01, what="the first cycle")
        for _ in range(20):  # into the period's sleep
            await asyncio.sleep(0.01)
        assert not runner.done()
        shutdown.set()
        await asyncio.wait_for(runner, timeout=30.0)

    asyncio.run(scenario())

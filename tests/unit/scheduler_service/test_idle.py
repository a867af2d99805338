"""Idle cycles: the loop skips a period when nothing changed and nothing is due by time alone (idle.py),
and runs one as soon as something is: a cache change, a ledger write of another instance, a member
change, a failed cycle, an SLA deadline, a reservation that may lapse, a status the writer held back."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from fractions import Fraction

import msgspec

from tests.support.waiting import eventually
from tests.unit.scheduler_service.service_builders import group, node, offline_loop, pod
from vc_runtime.sharding import SoleOwner
from vc_sched_core.cycle import CycleResult, load_scheduler_conf, run_cycle
from vc_sched_core.framework.decisions import PodGroupStatusUpdate
from vc_sched_core.snapshot import load_objects
from vc_sched_core.snapshot.cluster import PodGroupCondition, QueueObj
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.idle import IDLE_CYCLE_S, QUIET_CYCLE_S, IdleGate, Inputs
from vc_scheduler.inflight import InFlight
from vc_scheduler.status_policy import COUNTS_EVERY_S, COUNTS_SETTLE_S, STATUS_RESEND_S, SentStatuses
from vc_scheduler.status_writer import StatusWriter

WALL = datetime(2026, 1, 1, tzinfo=UTC)
SAME = Inputs(cache_version=7, members=("s0",), epoch=1)


def _after_a_cycle(**left: object) -> IdleGate:
    gate = IdleGate()
    gate.ran(SAME, 100.0, failed=False, **left)  # type: ignore[arg-type]
    return gate


def _needed(gate: IdleGate, inputs: Inputs = SAME, **kw: object) -> bool:
    args: dict[str, object] = {"ledger_changed": False, "now": 101.0, "wall": WALL, "writer_due": None} | kw
    return gate.needed(inputs, **args)  # type: ignore[arg-type]


def test_nothing_changed_and_nothing_due_skips() -> None:
    assert _needed(IdleGate())  # no cycle yet
    assert not _needed(_after_a_cycle())


def test_any_change_of_what_a_cycle_reads_runs_one() -> None:
    gate = _after_a_cycle()
    assert _needed(gate, replace(SAME, cache_version=8))
    assert _needed(gate, replace(SAME, members=("s0", "s1")))
    assert _needed(gate, replace(SAME, epoch=2))
    assert _needed(gate, replace(SAME, records=1))  # (the gauges' exporter counts the other shards' records)
    assert _needed(gate, ledger_changed=True)


def test_what_time_alone_may_change_runs_one_when_due() -> None:
    assert _needed(_after_a_cycle(by_reservation=1))  # a reservation may lapse any time
    deadline = _after_a_cycle(recheck_at=WALL + timedelta(minutes=5))
    assert not _needed(deadline) and _needed(deadline, wall=WALL + timedelta(minutes=5))
    assert not _needed(_after_a_cycle(), writer_due=101.5) and _needed(_after_a_cycle(), writer_due=101.0)
    assert _needed(_after_a_cycle(), now=100.0 + IDLE_CYCLE_S)  # the safety net


def test_a_cycle_that_deferred_jobs_is_followed_by_another_at_once() -> None:
    assert _needed(_after_a_cycle(deferred=True))  # nothing changed, yet the rest waits to be placed
    assert not _needed(_after_a_cycle(deferred=False))


def test_quiet_changes_alone_wait_for_the_status_spacing_when_nothing_was_left_pending() -> None:
    """A bind confirmed or a pod started gives a cycle only statuses to report, which the writer spaces
    COUNTS_EVERY_S anyway; with tasks left pending it may be what one waits for (a victim now Running)."""
    quiet = replace(SAME, quiet=1)
    assert not _needed(_after_a_cycle(), quiet)
    assert not _needed(_after_a_cycle(), quiet, now=100.0 + QUIET_CYCLE_S - 0.1)
    assert _needed(_after_a_cycle(), quiet, now=100.0 + QUIET_CYCLE_S)
    assert _needed(_after_a_cycle(pending=True), quiet)
    assert _needed(_after_a_cycle(), replace(quiet, cache_version=8))  # with new work: at once
    assert _needed(_after_a_cycle(), replace(quiet, epoch=2))
    assert not _needed(_after_a_cycle(), now=100.0 + QUIET_CYCLE_S)  # nothing changed: nothing to report


def test_the_loop_holds_a_cycle_for_quiet_changes_only_after_one_that_left_nothing_pending() -> None:
    """The loop's inputs carry the cache's quiet changes apart from its new work, and a cycle tells the
    gate whether it left tasks pending: one pod placed, the next started, holds; one that fits nowhere
    (5 cpus on a 4-cpu node) keeps every change running a cycle at the next period."""

    async def scenario() -> None:
        now = [100.0]
        cache = SchedulerCache()
        cache.nodes["n1"] = node("n1")
        cache.queues["default"] = QueueObj(name="default")
        cache.podgroups["ns/a"] = group("a", min_member=1)
        cache.pods["ns/a0"] = pod("a0", "a")
        loop = offline_loop(cache, clock=lambda: now[0])
        assert await loop._cycle(now[0]) is not None and set(loop.last.binds) == {"ns/a0"}  # type: ignore[union-attr]
        cache.quiet += 1  # the bind seen stored, the pod started
        now[0] += 0.5
        assert not loop._cycle_needed(now[0])
        now[0] = 100.0 + QUIET_CYCLE_S
        assert loop._cycle_needed(now[0])

        cache.podgroups["ns/b"] = group("b", min_member=1)
        cache.pods["ns/b0"] = msgspec.structs.replace(pod("b0", "b"), requests={"cpu": Fraction(5)})
        cache.version += 1
        assert await loop._cycle(now[0]) is not None and not loop.last.binds  # type: ignore[union-attr]
        cache.quiet += 1
        assert loop._cycle_needed(now[0] + 0.5)

    asyncio.run(scenario())


def test_a_failed_cycle_is_run_again() -> None:
    gate = IdleGate()
    gate.ran(SAME, 100.0, failed=True)
    assert _needed(gate)


def test_the_sla_plugin_asks_for_a_cycle_at_a_waiting_jobs_deadline() -> None:
    conf = load_scheduler_conf(
        """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: sla
    arguments: {sla-waiting-time: 1h}
- plugins:
  - name: predicates
  - name: proportion
"""
    )
    created = "2026-01-01T00:00:00Z"
    objs = [
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1"}}},
        {
            "kind": "PodGroup",
            "metadata": {"name": "big", "namespace": "d", "creationTimestamp": created},
            "spec": {"minMember": 1, "minResources": {"cpu": "4"}},
            "status": {"phase": "Pending"},
        },
    ]
    snap = load_objects(objs)
    waiting = run_cycle(snap, conf, now=WALL + timedelta(minutes=10))
    assert waiting.recheck_at == WALL + timedelta(hours=1)  # not admitted yet: time alone changes that
    overdue = run_cycle(snap, conf, now=WALL + timedelta(hours=2))
    assert overdue.recheck_at is None and overdue.podgroups["d/big"].phase == "Inqueue"
    assert run_cycle(snap, load_scheduler_conf(), now=WALL).recheck_at is None  # no sla plugin, no recheck


def test_a_held_back_status_is_due_again_and_a_confirmed_one_is_not() -> None:
    sent = SentStatuses()
    cond = PodGroupCondition("Scheduled", "True", "ready", "", "s-1")
    update = PodGroupStatusUpdate("ns/a", "Running", (cond,), 1, 0, 0)
    keep = lambda key: True  # noqa: E731
    assert sent.due(update, 10.0, None)
    assert sent.next_due(keep) == 10.0 + STATUS_RESEND_S  # sent: due again unless seen stored by then
    assert not sent.due(replace(update, running=2), 10.2, None)  # counts only: held back
    assert sent.next_due(keep) == 10.0 + COUNTS_EVERY_S
    later = 10.0 + COUNTS_EVERY_S
    assert sent.due(replace(update, running=2), later, None)
    assert not sent.due(replace(update, running=2), later + 0.5, None)  # not seen stored yet: resent later
    assert sent.next_due(keep) == later + STATUS_RESEND_S
    stored = replace(group("a"), phase="Running", conditions=(cond,))
    assert not sent.due(replace(update, running=2), later + 1, stored) and sent.next_due(keep) is None
    assert not sent.due(replace(update, running=3), later + 0.5, None)  # held back again...
    assert sent.next_due(lambda key: False) is None  # ...but a PodGroup gone or no longer ours is not due


def test_a_change_that_came_and_went_does_not_shorten_the_next_ones_settling() -> None:
    sent = SentStatuses()
    update = PodGroupStatusUpdate("ns/a", "Running", (), 1, 0, 0)
    assert sent.due(update, 10.0, None)
    assert not sent.due(replace(update, running=2), 20.0, None)  # a count moved: settling
    stored = replace(group("a"), phase="Running")
    assert not sent.due(update, 20.5, stored)  # and moved back: the store already says so
    # Much later another count moves: it settles from now, not from the change that went away.
    assert not sent.due(replace(update, running=3), 40.0, None)
    assert sent.due(replace(update, running=3), 40.0 + COUNTS_SETTLE_S, None)


def test_the_loop_skips_idle_periods_and_cycles_again_on_a_change() -> None:
    async def scenario() -> None:
        cache = SchedulerCache()
        cache.nodes["n1"] = node("n1")
        cache.queues["default"] = QueueObj(name="default")
        cache.podgroups["ns/a"] = group("a", min_member=1)
        cache.pods["ns/a0"] = pod("a0", "a")
        loop = offline_loop(cache, period_s=0.01)
        shutdown = asyncio.Event()
        runner = asyncio.create_task(loop.run(shutdown))

        # The loop's counters: polled often (a period is 10 ms), bounded generously.
        await eventually(lambda: loop.last is not None and loop.skipped >= 5, interval=0.01, what="a cycle, then idle")
        first = loop.last
        assert set(first.binds) == {"ns/a0"}  # type: ignore[union-attr]
        skipped = loop.skipped
        await eventually(lambda: loop.skipped >= skipped + 5, interval=0.01, what="five more idle periods")
        assert loop.last is first  # idle periods ran no cycle
        cache.version += 1  # the watch delivered something (here: the bind being stored)
        cache.pods["ns/a0"] = pod("a0", "a", node="n1", phase="Running")
        await eventually(lambda: loop.last is not first, interval=0.01, what="a cycle after the change")
        assert loop.last.binds == {}  # type: ignore[union-attr]
        shutdown.set()
        await runner

    asyncio.run(scenario())


def test_the_loop_places_a_backlog_larger_than_a_cycles_budget_in_cycles_back_to_back() -> None:
    """One bind per cycle and a period far longer than the test: every pod is placed all the same, each
    cycle taking the next, without waiting for a change or the period."""

    async def scenario() -> None:
        cache = SchedulerCache()
        cache.nodes["n1"] = node("n1")
        cache.queues["default"] = QueueObj(name="default")
        for name in ("a", "b", "c"):
            cache.podgroups[f"ns/{name}"] = group(name, min_member=1)
            cache.pods[f"ns/{name}0"] = pod(f"{name}0", name)
        loop = offline_loop(cache, period_s=3600.0, binds_per_cycle=1)
        results: list[CycleResult] = []
        run_once = loop.run_once

        async def recorded() -> CycleResult:
            results.append(await run_once())
            return results[-1]

        loop.run_once = recorded  # type: ignore[method-assign]
        shutdown = asyncio.Event()
        runner = asyncio.create_task(loop.run(shutdown))
        await eventually(lambda: len(results) >= 3, interval=0.01, what="three cycles")
        # Binds are assumed (the offline binder writes nothing): each cycle placed the next pod.
        assert [set(r.binds) for r in results[:3]] == [{"ns/a0"}, {"ns/b0"}, {"ns/c0"}]
        assert [bool(r.deferred) for r in results[:3]] == [True, True, False]
        shutdown.set()
        await runner

    asyncio.run(scenario())


def test_only_work_this_instance_can_do_wakes_it_early() -> None:
    """New pods of another instance's PodGroup wait for the period (that instance places them); freed
    resources and this instance's new demands wake it at once."""
    from vc_scheduler.share import owner_of

    class TwoMembers(SoleOwner):
        def __init__(self) -> None:
            super().__init__("s0")
            self.members = ("s0", "s1")

    cache = SchedulerCache()
    owner = TwoMembers()
    loop = offline_loop(cache, owner=owner, members=owner)
    keys = [f"ns/g{i}" for i in range(20)]
    theirs = next(k for k in keys if owner_of(k, owner.members) == "s1")
    ours = next(k for k in keys if owner_of(k, owner.members) == "s0")
    cache.demands.add(theirs)
    assert not loop._work_for_us()
    cache.demands.add(ours)
    assert loop._work_for_us() and cache.demands == set()  # taken
    cache.shared_work = True
    assert loop._work_for_us()


def test_the_writer_offers_again_what_it_held_back_once_due() -> None:
    """Cycles report only statuses that may have changed; the writer itself offers again a status it
    held back (or sent and has not seen stored) once its time comes."""
    cache, clock = SchedulerCache(), [100.0]
    work = InFlight("s0")
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    writer = StatusWriter(None, cache, events, ownership=SoleOwner("s0"), work=work, clock=lambda: clock[0])  # type: ignore[arg-type]
    cache.podgroups["ns/a"] = replace(group("a"), phase="Inqueue")
    cond = PodGroupCondition("Scheduled", "True", "ready", "", "s-1")
    update = PodGroupStatusUpdate("ns/a", "Running", (cond,), 1, 0, 0)
    assert writer.offer_podgroup(update) and work.backlog == 1
    assert writer.revisit() == 0  # sent just now: not due
    clock[0] += STATUS_RESEND_S
    assert writer.next_due() == 100.0 + STATUS_RESEND_S
    assert writer.revisit() == 1  # never seen stored: offered again, and queued (coalesced) for a write
    cache.podgroups["ns/a"] = replace(group("a"), phase="Running", conditions=(cond,))
    clock[0] += STATUS_RESEND_S
    assert writer.revisit() == 0 and writer.next_due() is None  # seen stored now: nothing held


def test_a_first_status_keeping_the_stored_phase_waits_and_a_phase_change_does_not() -> None:
    sent, keep = SentStatuses(), (lambda key: True)
    stored = group("a")  # Inqueue, no conditions
    unschedulable = PodGroupCondition("Unschedulable", "True", "NotEnoughPodsOfTask", "0/10 pods", "s-1")
    first = PodGroupStatusUpdate("ns/a", "Inqueue", (unschedulable,), 0, 0, 0)
    assert not sent.due(first, 10.0, stored)  # the same phase as stored: it waits
    assert sent.next_due(keep) == 10.0 + COUNTS_EVERY_S
    assert not sent.due(replace(first, conditions=()), 10.5, stored)  # still from the first offer on
    assert sent.due(first, 10.0 + COUNTS_EVERY_S, stored)
    other = PodGroupStatusUpdate("ns/b", "Running", (), 0, 0, 0)
    assert sent.due(other, 10.0, replace(group("b"), phase="Inqueue"))  # a phase change: at once
    fresh = replace(group("c"), phase="")  # created without a status: reads as Pending
    assert not sent.due(PodGroupStatusUpdate("ns/c", "Pending", (unschedulable,), 0, 0, 0), 10.0, fresh)
    assert sent.due(PodGroupStatusUpdate("ns/c", "Inqueue", (unschedulable,), 0, 0, 0), 10.1, fresh)

"""The loop's shell logic without I/O: gangs grouped per PodGroup with what their reservations need,
status writes only when something changed."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from service_builders import group, node, pod

from vc_scheduler.cache import SchedulerCache
from vc_scheduler.dispatch import Dispatcher
from vc_scheduler.ledger import View
from vc_scheduler.loop import ALLOCATED_EVERY_S, COUNTS_EVERY_S, Plan, SchedulingLoop
from vc_scheduling.cycle import CycleResult, CycleStats, load_scheduler_conf
from vc_scheduling.framework.decisions import Bind, PodGroupStatusUpdate, QueueStatusUpdate
from vc_scheduling.snapshot.cluster import ClusterSnapshot, PodGroupCondition, QueueObj

HIERARCHY_CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: capacity
    enableHierarchy: true
"""


def loop_with(cache: SchedulerCache, conf: str | None = None) -> SchedulingLoop:
    dispatcher = Dispatcher(None, cache, None, source="test")  # type: ignore[arg-type]
    return SchedulingLoop(cache, dispatcher, load_scheduler_conf(conf), period_s=1.0, instance="s0")


def result(*decisions: Bind) -> CycleResult:
    return CycleResult(decisions, {}, (), (), CycleStats(0.0, {}, 0, 0, 0))


def test_binds_are_grouped_per_podgroup_with_capacities_and_capped_queue() -> None:
    snap = ClusterSnapshot(
        nodes=(node("n1"), node("n2")),
        pods=(pod("a0", "a"), pod("a1", "a"), pod("b0", "b")),
        podgroups=(group("a", "capped", min_member=2), group("b", "open", min_member=2)),
        queues=(QueueObj(name="capped", capability={"cpu": Fraction(3)}), QueueObj(name="open")),
    )
    binds = (Bind("ns/a0", "uid-a0", "n1"), Bind("ns/a1", "uid-a1", "n2"), Bind("ns/b0", "uid-b0", "n1"))
    gangs = {g.podgroup: g for g in loop_with(SchedulerCache())._gangs(Plan(result(*binds), snap, View(), 2, 0.0))}
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
    plan = Plan(result(Bind("ns/a0", "uid-a0", "n1")), snap, View(), 1, 0.0)
    (gang,) = loop_with(SchedulerCache(), HIERARCHY_CONF)._gangs(plan)
    assert [name for name, _ in gang.capped_queues] == ["leaf", "org", "root"]
    # Without a queue tree in the conf (Volcano's default proportion) parents cap nothing.
    (flat,) = loop_with(SchedulerCache())._gangs(plan)
    assert [name for name, _ in flat.capped_queues] == ["leaf"]


def test_a_status_is_sent_once_until_it_changes() -> None:
    cache = SchedulerCache()
    cache.podgroups["ns/a"] = group("a", "q", min_member=2)
    loop = loop_with(cache)
    cond = PodGroupCondition("Scheduled", "True", "tasks in gang are ready to be scheduled", "", "s0-1")
    update = PodGroupStatusUpdate("ns/a", "Running", (cond,), 2, 0, 0)
    assert loop._status_changed("ns/a", update)
    # Next cycle: the same status under a new session's transition id; the store has not caught up.
    assert not loop._status_changed("ns/a", replace(update, conditions=(replace(cond, transition_id="s0-2"),)))
    # The store caught up (it keeps conditions the update does not mention).
    cache.podgroups["ns/a"] = replace(
        group("a", "q", min_member=2),
        phase="Running",
        conditions=(replace(cond, transition_id=""), PodGroupCondition("Unschedulable", "True")),
    )
    assert not loop._status_changed("ns/a", update)
    # Only a pod count moved: held back for COUNTS_EVERY_S, so a gang's pods starting make one write.
    assert not loop._status_changed("ns/a", replace(update, running=1))
    signature, sent_at = loop._statuses["ns/a"]
    loop._statuses["ns/a"] = (signature, sent_at - COUNTS_EVERY_S)
    assert loop._status_changed("ns/a", replace(update, running=1))
    # A phase change is never held back.
    assert loop._status_changed("ns/a", replace(update, phase="Completed", running=0, succeeded=2))


def test_queue_allocated_is_sent_when_it_changes_at_most_every_second() -> None:
    cache = SchedulerCache()
    cache.queues["default"] = QueueObj(name="default")
    loop = loop_with(cache)
    update = QueueStatusUpdate("default", {"cpu": "2"})
    assert loop._allocated_due(update)
    assert not loop._allocated_due(update)  # unchanged
    assert not loop._allocated_due(QueueStatusUpdate("default", {"cpu": "3"}))  # changed, but too soon
    figure, sent_at = loop._allocated_sent["default"]
    loop._allocated_sent["default"] = (figure, sent_at - ALLOCATED_EVERY_S)
    assert loop._allocated_due(QueueStatusUpdate("default", {"cpu": "3"}))
    assert not loop._allocated_due(QueueStatusUpdate("gone", {"cpu": "1"}))  # no such queue

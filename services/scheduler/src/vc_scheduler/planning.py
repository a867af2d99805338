"""PURE (runs in a worker thread): one instance's plan for a cycle: a scheduling session over its share
of the cluster (share.py), and when some admitted PodGroup of its share still waits, a second session
that may borrow capacity on other instances' nodes.

No clock is read here: the caller passes the session's time and a timer for the durations it reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from vc_sched_core.cycle import CycleResult, apply_result, run_cycle
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.framework.decisions import Bind
from vc_sched_core.snapshot.cluster import ClusterSnapshot
from vc_scheduler.share import Partition


@dataclass(frozen=True, slots=True)
class Cycle:
    """What one cycle plans on, gathered on the event loop."""

    snapshot: ClusterSnapshot  # the instance's share (the whole cluster while it runs alone)
    owner: Partition  # who owns which PodGroup and node among the live members
    session_uid: str
    now: datetime  # the session's time (conditions, SLA waits)
    report_all: bool = True  # False: leave out PodGroup statuses that cannot have changed
    placed_by_reservation: int = 0  # others' pending pods planned around as bound, by their reservation
    bind_budget: int | None = None  # the most binds the cycle decides (run_cycle's bind_budget)
    held_out: int = 0  # settled PodGroups of the share not in `snapshot` (share.py)


@dataclass(frozen=True, slots=True)
class Plan:
    """What one cycle produced."""

    result: CycleResult
    snapshot: ClusterSnapshot  # the snapshot the binds were planned on (the borrowing one, if any)
    owned: int  # PodGroups the instance owns (those held out while settled included)
    placed_by_reservation: int = 0


def plan_cycle(
    cycle: Cycle,
    conf: SchedulerConf,
    carried: CarriedState,
    timer: Callable[[], float],
    stream: Callable[[tuple[Bind, ...]], None] | None = None,
) -> Plan:
    """One session over the share, on the `carried` state (held by the caller between calls, so a
    call's cost follows what changed since the previous one; the plan is the same without it).
    `stream` is handed each job's binds as soon as the session will bind no more of that job
    (run_cycle's `stream`); the plan's decisions include them all the same."""
    owner = cycle.owner
    members = owner.members
    # Instances search their nodes from evenly spaced starts (their borrowing rarely meets).
    start = members.index(owner.instance) / len(members) if owner.instance in members else 0.0
    report = None if owner.alone() else owner.owns
    result = run_cycle(
        cycle.snapshot,
        conf,
        now=cycle.now,
        session_uid=cycle.session_uid,
        carried=carried,
        clock=timer,
        search_start=start,
        report=report,
        report_unchanged=cycle.report_all,
        bind_budget=cycle.bind_budget,
        stream=stream,
    )
    owned = len(cycle.snapshot.podgroups) + cycle.held_out
    return Plan(result, cycle.snapshot, owned, cycle.placed_by_reservation)


BORROWING_ACTIONS = ("allocate", "backfill")  # the second session places; it evicts nothing


def plan_borrowing(
    first: Plan, borrowing: ClusterSnapshot, waiting: frozenset[str], conf: SchedulerConf, cycle: Cycle
) -> Plan:
    """A second session over `borrowing` (the share with other instances' nodes at the capacity they
    have left, after the first session's decisions), for the PodGroups in `waiting`, which the first
    could not place: its binds and their statuses are added to the first's. It only places (allocate,
    backfill: the first session already preempted and reclaimed for the same jobs), and is built anew:
    it runs only while something waits, and its nodes are not carried."""
    second = run_cycle(
        apply_result(borrowing, first.result),
        replace(conf, actions=tuple(a for a in conf.actions if a in BORROWING_ACTIONS)),
        now=cycle.now,
        session_uid=f"{cycle.session_uid}-b",
        report=waiting.__contains__,
    )
    return replace(first, result=merge(first.result, second), snapshot=borrowing)


def merge(first: CycleResult, second: CycleResult) -> CycleResult:
    """The second session's binds after the first's decisions, its statuses over the first's."""
    stats = replace(first.stats, duration_s=first.stats.duration_s + second.stats.duration_s)
    return replace(
        first,
        decisions=first.decisions + tuple(d for d in second.decisions if isinstance(d, Bind)),
        podgroups={**first.podgroups, **second.podgroups},
        pipelined=tuple(sorted(set(first.pipelined) | set(second.pipelined))),
        stats=stats,
    )

"""PURE (runs in a worker thread): one instance's plan for a cycle. The ledger view of every pod, this
instance's share of the cluster (sharding.py), and one scheduling session over it (vc_scheduling).

No clock is read here: the caller passes the session's time, the wall-clock time the ledger's
reservation stamps are compared with, and a timer for the durations it reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from vc_scheduler.ledger import Record, View
from vc_scheduler.ledger_view import LedgerViews
from vc_scheduler.sharding import Owners, ReservedPlacements, live_reservations, shard
from vc_scheduling.cycle import CycleResult, run_cycle
from vc_scheduling.framework.carried import CarriedState
from vc_scheduling.framework.conf import SchedulerConf
from vc_scheduling.snapshot.cluster import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class Plan:
    """What one cycle produced, with the views the binder checks its reservations against."""

    result: CycleResult
    snapshot: ClusterSnapshot
    view: View
    owned: int
    shard_s: float
    # Pending pods of other instances' PodGroups planned around as bound, only by their reservation: a
    # reservation lapses with time alone (ledger.keep), so a cycle may decide otherwise later.
    placed_by_reservation: int = 0


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
    now: datetime,
    wall_s: float,
    timer: Callable[[], float],
    memo: CarriedState | None = None,
    views: LedgerViews | None = None,
    owners: Owners | None = None,
    placements: ReservedPlacements | None = None,
    report_all: bool = True,
) -> Plan:
    """View, shard, one scheduling cycle. `now`: the session's time (conditions, SLA waits); `wall_s`:
    Unix time, against which reservation stamps age; `timer`: seconds from any origin, for the
    reported durations. The carried state (`memo`, `views`, `owners`, `placements`, held by the caller
    between calls) makes a call's cost follow what changed since the previous one; the plan is the same
    without it.
    Without `report_all`, PodGroup statuses that cannot have changed since the last report are left out
    (run_cycle's report_unchanged)."""
    started = timer()
    views = views if views is not None else LedgerViews()
    view = views.view(full, gone=gone, live=frozenset(members), instance=instance, epoch=epoch, assumed=assumed)
    owns: Callable[[str], bool] | None = None
    search_start = 0.0
    if sharded:
        owns = (owners if owners is not None else Owners()).filter(
            instance, members, live=len(full.podgroups) + len(full.queues)
        )
        reserved = live_reservations(ledger_records, view, wall_s)
        snapshot, by_reservation = shard(full, owns, reserved, placements)
        owned = sum(1 for pg in full.podgroups if owns(pg.key))
        # Instances search the nodes from evenly spaced starts (apart, their reservations rarely meet).
        search_start = members.index(instance) / len(members) if instance in members else 0.0
    else:
        snapshot, owned, by_reservation = full, len(full.podgroups), 0
    shard_s = timer() - started
    result = run_cycle(
        snapshot,
        conf,
        now=now,
        session_uid=session_uid,
        memo=memo,
        clock=timer,
        search_start=search_start,
        report=owns,
        report_unchanged=report_all,
    )
    return Plan(result, snapshot, view, owned, shard_s, by_reservation)

"""PURE: when the loop may skip a cycle because it would only repeat the last one.

The rule. A cycle is skipped when all of these hold:
- nothing a cycle reads changed since the last cycle started: no change in the cache
  (SchedulerCache.version and .quiet count every watch event and every forgotten assume; not an
  assume, which is what the last cycle decided; quiet changes alone wait, see below), no other
  instance's ledger write, the same members and epoch, and
  for the instance that exports the cluster's gauges, no other shard's record (the gauges count them);
- the last cycle did not fail;
- the last cycle deferred no job (its bind budget was spent before allocate got to every job: the
  rest waits for the next cycle, at once);
- nothing the last cycle left depends on time alone:
  - no plugin asked for a recheck by now (Session.recheck_by: the sla plugin, when a job with work left
    reaches its waiting time, is admitted and pipelined by time alone),
  - it planned no pending pod around as bound only because another instance reserved it (a reservation
    lapses after ledger.RECLAIM_DEAD_AFTER_S / ABANDONED_AFTER_S without anything changing),
  - the status writer holds back no status now due (pod counts spaced COUNTS_EVERY_S, queue figures
    ALLOCATED_EVERY_S, a write not yet seen stored resent after STATUS_RESEND_S: StatusWriter.next_due);
- and less than IDLE_CYCLE_S passed since the last cycle (a safety net: one cycle at least that often).

Given the same inputs a cycle decides the same (the core is pure and reads no clock but the session time,
which only the sla plugin uses), so a skipped cycle loses nothing.

Quiet changes. A change that gives a cycle nothing new to do (a bind confirmed, a pod started, a status
written: SchedulerCache.quiet) runs a cycle only once QUIET_CYCLE_S passed since the last one, when that
cycle left no task pending: with nothing pending no pod can be placed, enqueued for, or preempted for,
and what such a cycle would produce is pod counts and phases in PodGroup statuses, which the status
writer spaces COUNTS_EVERY_S apart anyway. Under a steady load every period brings such changes, so
without this each instance ran a cycle per period to report them: with two instances 31 of 61 cycles
bound nothing, against 14 of 21 alone (docs/benchmarks.md, "Quiet changes"). A cycle that left tasks
pending runs on the next period as before: a pod turning Running may be the victim reclaim waits for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from vc_scheduler.status_policy import COUNTS_EVERY_S

IDLE_CYCLE_S: Final = 30.0
QUIET_CYCLE_S: Final = COUNTS_EVERY_S


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a cycle reads, by version: equal inputs, equal decisions."""

    cache_version: int
    members: tuple[str, ...]
    epoch: int
    records: int = 0  # the other shards' records read (OtherShards.version), if the cycle counts them
    quiet: int = 0  # changes that give a cycle nothing new to do (SchedulerCache.quiet)


@dataclass(slots=True)
class IdleGate:
    """The last cycle's inputs and what it left that time alone may change; `needed` says whether the
    next cycle would do anything the last did not."""

    inputs: Inputs | None = None
    at: float = 0.0  # monotonic time the last cycle started
    failed: bool = False
    recheck_at: datetime | None = None
    by_reservation: int = 0
    deferred: bool = False
    pending: bool = False  # the last cycle left tasks pending

    def needed(
        self, inputs: Inputs, *, ledger_changed: bool, now: float, wall: datetime, writer_due: float | None
    ) -> bool:
        if self.inputs is None or self.failed or self.deferred or ledger_changed:
            return True
        if inputs != self.inputs:
            quiet_only = replace(inputs, quiet=self.inputs.quiet) == self.inputs
            if not quiet_only or self.pending or now - self.at >= QUIET_CYCLE_S:
                return True
        if self.by_reservation or now - self.at >= IDLE_CYCLE_S:
            return True
        if self.recheck_at is not None and wall >= self.recheck_at:
            return True
        return writer_due is not None and now >= writer_due

    def ran(
        self,
        inputs: Inputs,
        at: float,
        *,
        failed: bool,
        recheck_at: datetime | None = None,
        by_reservation: int = 0,
        deferred: bool = False,
        pending: bool = False,
    ) -> None:
        self.inputs, self.at, self.failed = inputs, at, failed
        self.recheck_at, self.by_reservation, self.deferred = recheck_at, by_reservation, deferred
        self.pending = pending

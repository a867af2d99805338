"""PURE: when a PodGroup's or a queue's status is worth a write, and what the write says.

Every cycle reports every PodGroup's status and every queue's `status.allocated`; a write costs a
compare-and-set (and on kube an apiserver request), so only a change is written, and changes that
come in bursts are spaced:
- a PodGroup's phase changing is written at once (the job controller acts on it); anything else
  (pod counts, conditions) is written at most once per COUNTS_EVERY_S and only once it has waited
  COUNTS_SETTLE_S for the rest of its burst (a gang's pods turn Running over a second or so: the
  first of them after a quiet spell would otherwise make a write of its own), and a new PodGroup's first
  status that keeps its phase waits as long: a gang's pods starting make one write, not one per pod,
  and so do the conditions that come and go while the job controller creates its pods and they wait
  for their binds (on kube this was six status PATCHes per gang: docs/benchmarks.md, "Requests per
  pod");
- a gang placed whole reads Scheduled at once, but Running only once its binds are seen: while it is
  Inqueue with a Scheduled condition not yet sent, that condition waits up to BINDS_SEEN_S for the
  phase change, which carries it (otherwise a condition-only PATCH for half the gangs, a few seconds
  before the Running one);
- a gang whose binds are seen reads Running while its pods are still starting: from Inqueue, that phase
  change waits up to PODS_START_S for minMember of them to run, so the pod counts that follow within
  seconds go with it (Inqueue, Running and counts were three PATCHes per gang). Nothing acts on the
  difference: the job controller creates pods for either phase, the scheduler's enqueue accounting
  reserves an admitted gang's unplaced minResources in either; only a queue's status (its Inqueue count
  and inqueueResources, which vcctl and the dashboard show) counts it Inqueue meanwhile;
- an update equal to what was last sent is re-sent only after STATUS_RESEND_S, and only if the
  stored status still disagrees (the write failed, or another writer won); until then the watch
  simply has not caught up;
- a queue's `status.allocated` is written when it changed, at most every ALLOCATED_EVERY_S (binds
  move it many times a second on a busy cluster).
The spacing itself (hold, settle, flush) is the runtime's status pacing (vc_runtime.status_pacing); the
scheduler's figures are the constants below. The clock is the caller's (a monotonic reading, in seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import cast

from vc_proto.scheduling import PodGroupCondition as StoredCondition
from vc_proto.scheduling import PodGroupStatus
from vc_proto.vocabulary import PodGroupConditionType, PodGroupPhase
from vc_runtime.status_pacing import Pacing, StatusHolds
from vc_sched_core.framework.decisions import PodGroupStatusUpdate, QueueStatusUpdate
from vc_sched_core.snapshot.cluster import PodGroupCondition, PodGroupObj

STATUS_RESEND_S = 5.0
COUNTS_EVERY_S = 3.0  # a PodGroup whose phase holds is rewritten at most this often
COUNTS_SETTLE_S = 1.0  # and a change that keeps the phase waits this long from when it was first offered
ALLOCATED_EVERY_S = 1.0  # a queue's status.allocated is rewritten at most this often
BINDS_SEEN_S = 15.0  # a new Scheduled condition on an Inqueue PodGroup waits this long for Running
PODS_START_S = 10.0  # Inqueue -> Running waits this long for minMember pods to run
COUNTS = Pacing(every_s=COUNTS_EVERY_S, settle_s=COUNTS_SETTLE_S)
ALLOCATED = Pacing(every_s=ALLOCATED_EVERY_S, settle_s=0.0)
SCHEDULED = PodGroupConditionType.SCHEDULED
UNSCHEDULABLE = PodGroupConditionType.UNSCHEDULABLE
# The gang's verdicts while an admitted job's pods are still being created (Volcano's gang plugin):
# the job is starting, not stuck.
STARTING_REASONS = frozenset({"NotEnoughPodsOfTask", "NotEnoughTasks"})

Signature = tuple[object, ...]


def _conditions(conditions: tuple[PodGroupCondition, ...]) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status or "", c.reason or "", c.message or "") for c in conditions}


def signature(update: PodGroupStatusUpdate) -> Signature:
    """An update without its transition ids (they differ per session even when nothing changed)."""
    return (
        update.phase,
        update.running,
        update.succeeded,
        update.failed,
        tuple(sorted(_conditions(update.conditions).items())),
    )


def same_status(left: PodGroupStatusUpdate, right: PodGroupStatusUpdate) -> bool:
    """Equal signatures, checked without building them (the loop offers every PodGroup every cycle);
    conditions in another order compare unequal here, which only costs the full check."""
    if (left.phase, left.running, left.succeeded, left.failed) != (
        right.phase,
        right.running,
        right.succeeded,
        right.failed,
    ):
        return False
    if len(left.conditions) != len(right.conditions):
        return False
    return all(
        (a.type, a.status or "", a.reason or "", a.message or "")
        == (b.type, b.status or "", b.reason or "", b.message or "")
        for a, b in zip(left.conditions, right.conditions, strict=True)
    )


def minor_only(sent: Signature, now: Signature) -> bool:
    """Two signatures differ, but not in the phase."""
    return sent[0] == now[0] and sent != now


def newly_scheduled(sent: Signature, update: PodGroupStatusUpdate) -> bool:
    """The update is Inqueue and says Scheduled where what was sent did not: the gang is placed and its
    binds are on their way, so its phase is about to change."""
    if update.phase != PodGroupPhase.INQUEUE:
        return False
    now = _conditions(update.conditions).get(SCHEDULED)
    if now is None or now[0] != "True":
        return False
    sent_conditions = cast("tuple[tuple[str, tuple[str, str, str]], ...]", sent[4])  # as `signature` builds it
    return dict(sent_conditions).get(SCHEDULED) != now


def starting(sent: Signature, update: PodGroupStatusUpdate, stored: PodGroupObj | None) -> bool:
    """Inqueue was sent and the update reads Running with fewer than minMember pods running or finished
    (a short pod may finish before its last sibling starts): the gang is bound, its pods are starting."""
    return (
        sent[0] == PodGroupPhase.INQUEUE
        and update.phase == PodGroupPhase.RUNNING
        and stored is not None
        and update.running + update.succeeded + update.failed < stored.min_member
    )


def stored_matches(phase: str, stored: tuple[PodGroupCondition, ...], update: PodGroupStatusUpdate) -> bool:
    """The stored status already says what the update says (stored conditions may hold more types:
    a write keeps the conditions an update does not mention)."""
    have = _conditions(stored)
    return phase == update.phase and all(have.get(t) == v for t, v in _conditions(update.conditions).items())


class SentStatuses:
    """The PodGroup statuses last sent, and when: whether a new update is due a write."""

    def __init__(self) -> None:
        self._sent: dict[str, tuple[Signature, float]] = {}
        self._first_offered: dict[str, float] = {}  # PodGroups offered, never sent: since when
        self._starting_since: dict[str, float] = {}  # Running offered after Inqueue, pods not running yet
        # Updates declined for now, until when; a change keeping the sent phase settles from when it was
        # first held. The loop skips cycles while nothing changes; it must still run one then (next_due).
        self._held: StatusHolds[str] = StatusHolds(COUNTS)

    def due(self, update: PodGroupStatusUpdate, now: float, stored: PodGroupObj | None) -> bool:
        """Whether to write `update` now (`stored`: the PodGroup as the watch last delivered it); a
        True is recorded as sent."""
        key, sig = update.podgroup, signature(update)
        sent = self._sent.get(key)
        # A PodGroup no one has given a status yet reads as Pending (Volcano's default phase).
        if sent is None and stored is not None and (stored.phase or PodGroupPhase.PENDING) == update.phase:
            first = self._first_offered.setdefault(key, now)
            if now - first < COUNTS_EVERY_S:
                self._held.hold_until(key, first + COUNTS_EVERY_S)
                return False  # a first status keeping the phase: the enqueue about to follow says more
        if sent is not None and starting(sent[0], update, stored):
            first = self._starting_since.setdefault(key, now)
            if now - first < PODS_START_S:
                self._held.hold_until(key, first + PODS_START_S)
                return False  # bound, pods starting: the counts about to follow go in the same write
        else:
            self._starting_since.pop(key, None)
        if sent is not None and minor_only(sent[0], sig):
            settle = max(COUNTS_SETTLE_S, BINDS_SEEN_S) if newly_scheduled(sent[0], update) else None
            if now < self._held.hold(key, now, settle_s=settle):
                return False  # the phase holds: wait, so a gang's pods and conditions make one write
        if sent is not None and sent[0] == sig:
            self._held.restart_settle(key)  # a change that came and went: the next one settles afresh
            if stored is not None and stored_matches(stored.phase, stored.conditions, update):
                self._held.release(key)  # written and seen: nothing to resend
                return False
            if now - sent[1] < STATUS_RESEND_S:
                self._held.hold_until(key, sent[1] + STATUS_RESEND_S)  # resent then if the store still disagrees
                return False
        # Sent: held until the store is seen to say it (a write that failed is resent STATUS_RESEND_S on).
        self._held.restart_settle(key)
        self._held.hold_until(key, now + STATUS_RESEND_S)
        self._held.wrote(key, now)
        self._sent[key] = (sig, now)
        self._first_offered.pop(key, None)
        self._starting_since.pop(key, None)
        return True

    def holds(self, key: str) -> bool:
        """An update of this key was declined for now, or sent and not yet seen stored."""
        return self._held.holds(key)

    def due_keys(self, now: float) -> list[str]:
        """The keys held whose time has come."""
        return self._held.due_keys(now)

    def next_due(self, keep: Callable[[str], bool]) -> float | None:
        """The earliest time an update declined for now would be written if offered again (for the
        PodGroups `keep` says are still ours to write)."""
        return self._held.next_due(keep)

    def forget_all_but(self, live: Container[str], *, above: int) -> None:
        """Drop deleted PodGroups' entries once more than `above` are held (bounded by the cluster)."""
        if len(self._sent) + len(self._first_offered) + len(self._held.held_since) + len(self._starting_since) > above:
            self._sent = {k: v for k, v in self._sent.items() if k in live}
            self._first_offered = {k: v for k, v in self._first_offered.items() if k in live}
            self._starting_since = {k: v for k, v in self._starting_since.items() if k in live}
            self._held.keep_only(live)


class SentAllocations:
    """Each queue's `status.allocated` last sent, and when."""

    def __init__(self) -> None:
        self._sent: dict[str, dict[str, str]] = {}
        self._held: StatusHolds[str] = StatusHolds(ALLOCATED)

    def due(self, update: QueueStatusUpdate, now: float) -> bool:
        queue = update.queue
        if self._sent.get(queue) == update.allocated:
            self._held.release(queue)
            return False
        if now < self._held.due_at(queue, now):
            self._held.hold(queue, now)
            return False
        self._held.release(queue)
        self._held.wrote(queue, now)
        self._sent[queue] = update.allocated
        return True

    def next_due(self, keep: Callable[[str], bool]) -> float | None:
        return self._held.next_due(keep)


def merge_status(old: PodGroupStatus, update: PodGroupStatusUpdate, now: str) -> PodGroupStatus:
    """The status to store: Volcano keeps a condition's transition time unless its status, reason or
    message changed, and a write keeps the stored conditions the update does not mention. `now` is
    the transition time of what changed."""
    previous = {c.type: c for c in old.conditions or []}
    conditions = []
    for cond in update.conditions:
        before = previous.get(cond.type)
        same = before is not None and (before.status, before.reason or "", before.message or "") == (
            cond.status,
            cond.reason,
            cond.message,
        )
        conditions.append(
            StoredCondition(
                type=cond.type,
                status=cond.status,
                reason=cond.reason or None,
                message=cond.message or None,
                transition_id=before.transition_id if same and before else cond.transition_id or None,
                last_transition_time=(before.last_transition_time if same and before else now),
            )
        )
    for kind, kept in previous.items():
        if kind not in {c.type for c in update.conditions}:
            conditions.append(kept)
    return PodGroupStatus(
        phase=update.phase,
        conditions=conditions or None,
        running=update.running or None,
        succeeded=update.succeeded or None,
        failed=update.failed or None,
    )


def merely_starting(condition_type: str | None, reason: str | None, phase: str | None) -> bool:
    """An Unschedulable verdict on an Inqueue PodGroup whose pods are not all created yet: every healthy
    gang passes through it, so it is no news for the job's history (nor a Warning Event); the condition
    itself is still written, as Volcano writes it."""
    return condition_type == UNSCHEDULABLE and reason in STARTING_REASONS and phase == PodGroupPhase.INQUEUE

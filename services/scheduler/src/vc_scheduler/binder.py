"""SHELL: commit a gang (one PodGroup's binds of one cycle) all or nothing.

A gang first takes its room. A capped queue's capability holds across instances, so a gang in one is
reserved in the placement ledger (ledger_kv.py) on its queue and each capped ancestor. Nodes have one
writer each (lending.py): on the nodes this instance owns it commits on its own word (checked only
against the loans it granted there meanwhile); on another instance's node it needs a loan from that
owner, which checks actual fit. Only then are its pods bound, each a compare-and-set on the pod (only
an unbound, undeleted pod of the same uid is bound, the fence the binding subresource gives in
Kubernetes); a pod that could not be bound gives its room back. Every write stops at the membership
fence (the ledger's own, and a FencedStore for the pods), so an instance whose lease lapsed (paused,
partitioned) writes nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import partial

import structlog

from vc_core.errors import Conflict, Fenced, NotFound
from vc_core.ownership import Ownership
from vc_core.resources import Resources
from vc_core.store import ObjectStore
from vc_proto import events as ev
from vc_proto.core import Pod
from vc_runtime.sharding import FencedStore
from vc_sched_core.framework.decisions import Bind
from vc_scheduler import ledger
from vc_scheduler.cache import BOUND_BY, SchedulerCache, stored_object
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger_kv import Ledger, queue_key
from vc_scheduler.lending import loan_pods
from vc_scheduler.loans import LoanDesk
from vc_scheduler.metrics import BINDS, GANGS, STAGE, TASK_LATENCY
from vc_scheduler.peers import Alone, Peers

log = structlog.get_logger(__name__)
# A gang planned before this instance's lease renewal came late (an overloaded machine: on kube, one
# lapse dropped ~230 planned gangs, each planned again with its PodGroup's phase written Running, then
# Pending, then Running) waits this long for the instance to re-join and settle, then commits if the
# PodGroup is still its own. Safe: its announcement still claims its nodes (others remove it only after
# peers.ANNOUNCED_STALE_S), and the conditional bind refuses a pod a peer placed meanwhile.
OWN_LAPSE_WAIT_S = 5.0
STANDING_POLL_S = 0.05
Held = list[tuple[str, list[str]]]  # ledger key -> the pod uids reserved on it, for the rollback
Loans = list[tuple[str, list[str]]]  # owner instance -> the pod uids it lent room to, to give back


class GangBinder:
    def __init__(
        self,
        store: ObjectStore,
        cache: SchedulerCache,
        events: SchedulerEvents,
        *,
        ownership: Ownership,
        work: InFlight,
        ledger_kv: Ledger | None = None,
        peers: Peers | None = None,
        desk: LoanDesk | None = None,
    ) -> None:
        """`peers`: where this instance may commit and whom to ask elsewhere (alone by default);
        `desk`: how it asks (none: it never borrows)."""
        self._store = FencedStore(store, ownership)
        self._cache = cache
        self._events = events
        self._own = ownership
        self._work = work
        self._ledger = ledger_kv
        self._peers: Peers = peers or Alone(ownership.instance)
        self._desk = desk

    @property
    def instance(self) -> str:
        return self._own.instance

    def submit(self, gang: Gang) -> None:
        """Assume the gang's binds in the cache (the next cycle must not place them again) and queue it."""
        for bind in gang.binds:
            self._cache.assume(bind.pod, bind.node, dict(bind.annotations))
        epoch = self._own.epoch
        self._work.submit("Gang", lambda: self.commit(gang, epoch), on_failure=lambda: self._forget(gang.binds))

    def _forget(self, binds: tuple[Bind, ...]) -> None:
        for bind in binds:
            self._cache.forget_assumed(bind.pod)

    async def _still_owned(self, podgroup: str, planned_epoch: int | None) -> bool:
        """Whether this instance owns `podgroup`. While its own standing is what changed since the gang
        was planned (its lease lapsed, or it re-joined under a new epoch and is settling), wait for it,
        up to OWN_LAPSE_WAIT_S; a PodGroup another member took while this instance's standing held has
        moved, and is dropped at once."""
        deadline = time.monotonic() + OWN_LAPSE_WAIT_S
        while not self._own.owns(podgroup):
            standing_changed = not self._own.can_write() or (
                planned_epoch is not None and self._own.epoch != planned_epoch
            )
            if not standing_changed or time.monotonic() >= deadline:
                return False
            await asyncio.sleep(STANDING_POLL_S)  # the lease and settle deadlines are clock times, not events
        return True

    async def commit(self, gang: Gang, planned_epoch: int | None = None) -> None:
        """Reserve and bind `gang`; `planned_epoch`: this instance's epoch when the cycle planned it."""
        if gang.podgroup is not None and not await self._still_owned(gang.podgroup, planned_epoch):
            # Ownership moved since the cycle planned it: the new owner places it.
            GANGS.labels(self.instance, "moved").inc()
            self._forget(gang.binds)
            return
        held: Held = []
        loans: Loans = []
        try:
            reserved = await self.reserve(gang, held, loans)
        except Exception:
            await self._release(held, loans)  # all or nothing, also when a write failed half-way
            raise
        if not reserved:
            GANGS.labels(self.instance, "conflict").inc()
            await self._release(held, loans)
            self._forget(gang.binds)
            return
        outcomes = await asyncio.gather(*(self._bind(b) for b in gang.binds), return_exceptions=True)
        failed = {b.uid for b, ok in zip(gang.binds, outcomes, strict=True) if ok is not True}
        if failed:
            self._forget(tuple(b for b in gang.binds if b.uid in failed))
            await self._release(
                [(key, [u for u in uids if u in failed]) for key, uids in held],
                [(owner, [u for u in uids if u in failed]) for owner, uids in loans],
            )
        for outcome in outcomes:
            if isinstance(outcome, Fenced):
                raise outcome
        GANGS.labels(self.instance, "ok" if not failed else "partial").inc()

    # -- the room ----------------------------------------------------------------------------------
    async def reserve(self, gang: Gang, held: Held, loans: Loans) -> bool:
        """All of the gang's room, or False (what was taken is in `held` and `loans`, for the caller to
        give back): its capped queues in the ledger first, then its nodes. On the nodes this instance
        owns it commits on its own word, once the loans it granted there since leave room; on others'
        nodes it needs a loan from each owner."""
        if self._ledger is not None:
            stamp = time.time()
            for queue, capability in gang.capped_queues:  # in order: a refusal stops the rest
                occupying = partial(gang.view.occupying_queue, queue)
                if not await self._take(gang, queue_key(queue), gang.binds, capability, occupying, stamp, held):
                    return False
        own: dict[str, list[Bind]] = defaultdict(list)
        borrowed: dict[str, list[Bind]] = defaultdict(list)
        for b in gang.binds:
            mine = self._peers.commits_on(b.node)
            if mine and b.node not in gang.borrowed:
                own[b.node].append(b)
            elif not mine and (owner := self._peers.owner_of(b.node)) not in (None, self.instance):
                assert owner is not None
                borrowed[owner].append(b)
            else:  # the node moved, or is moving, since the cycle: the next cycle plans again
                log.info("gang.refused", podgroup=gang.podgroup, node=b.node, reason="the node changed owner")
                return False
        if not self._fits_own(gang, own):
            return False
        if borrowed:
            return await self._borrow(gang, borrowed, loans)
        return True

    def _fits_own(self, gang: Gang, own: Mapping[str, list[Bind]]) -> bool:
        """Whether the loans granted on these nodes since the cycle planned the gang leave it room (a node
        with no loan has had no other writer: the cycle's plan holds there)."""
        book, now = self._peers.book, time.time()
        for node, binds in own.items():
            if not book.lends_on(node):
                continue
            new = {b.uid: self._reservation(gang, b, now) for b in binds}
            over = book.fits(node, new, gang.capacities.get(node, {}), self._cache.occupying(node), gang.view, now)
            if over:
                log.info("gang.refused", podgroup=gang.podgroup, node=node, over=over, reason="lent meanwhile")
                return False
        return True

    async def _borrow(self, gang: Gang, by_owner: Mapping[str, list[Bind]], loans: Loans) -> bool:
        """A loan from every owner at once; all granted, or False. Granted loans go into `loans`."""
        if self._desk is None:
            return False
        asked = sorted(by_owner)
        answers = await asyncio.gather(
            *(
                self._desk.borrow(owner, loan_pods(((b.uid, b.pod, b.node) for b in by_owner[owner]), gang.requests))
                for owner in asked
            )
        )
        for owner, answer in zip(asked, answers, strict=True):
            if answer.granted:
                loans.append((owner, [b.uid for b in by_owner[owner]]))
            else:
                log.info("gang.refused", podgroup=gang.podgroup, owner=owner, reason=answer.reason)
        return all(answer.granted for answer in answers)

    def _reservation(self, gang: Gang, bind: Bind, at: float) -> ledger.Reservation:
        requests = gang.requests.get(bind.uid, {})
        return ledger.reservation(bind.pod, requests, instance=self.instance, epoch=self._own.epoch, at=at)

    async def _take(
        self,
        gang: Gang,
        key: str,
        binds: tuple[Bind, ...],
        capacity: Mapping[str, Fraction],
        occupying: Callable[[], Mapping[str, Resources]],
        stamp: float,
        held: Held,
    ) -> bool:
        """Reserve `binds` on one capped queue's ledger key; what was taken goes into `held` for the
        caller's all-or-nothing rollback."""
        assert self._ledger is not None
        if not self._own.can_write():  # fail fast; the ledger fences its write as well
            raise Fenced(f"ledger {key}")
        new = {b.uid: self._reservation(gang, b, stamp) for b in binds}
        outcome = await self._ledger.reserve(key, new, capacity, occupying, gang.view, node=None)
        if outcome.record is None:
            log.info("gang.refused", podgroup=gang.podgroup, key=key, over=outcome.over)
            return False
        held.append((key, [b.uid for b in binds]))
        return True

    async def _release(self, held: Held, loans: Loans) -> None:
        for key, uids in held:
            if uids and self._ledger is not None and self._own.can_write():
                try:
                    await self._ledger.release(key, uids)
                except Exception as exc:  # left for pruning: it reclaims unbound reservations
                    log.info("ledger.release_failed", key=key, error=str(exc))
        if self._desk is not None:
            for owner, uids in loans:
                if uids:
                    await self._desk.give_back(owner, uids)

    # -- the pods ----------------------------------------------------------------------------------
    async def _bind(self, bind: Bind) -> bool:
        """Bind one pod: one compare-and-set from the cached copy when it is current. The store re-reads
        and tries again after a lost race (its retry policy, the only one here); a pod that is bound,
        deleting or another pod by then is judged from the stored copy: bound to this very node for
        this uid (by an earlier owner, or our own write that timed out) counts as done."""
        namespace, name = bind.pod.split("/", 1)
        stored = self._cache.stored_unbound(bind.pod)
        pod = stored_object(Pod, stored) if stored is not None else None
        # The bound-by annotation and the decision's own (deviceshare's GPU assignment) ride along, as a
        # Binding's annotations do.
        annotations = {**dict(bind.annotations), BOUND_BY: f"{self.instance}/{self._own.epoch}"}
        try:
            if pod is None:
                pod = await self._store.get(Pod, namespace, name)
            started = time.perf_counter()
            await self._store.bind(pod, bind.node, annotations=annotations)
        except NotFound:
            BINDS.labels(self.instance, "gone").inc()
            return False
        except Conflict:
            return await self._judge(bind, namespace, name)
        BINDS.labels(self.instance, "ok").inc()
        STAGE.labels("Bind").observe((time.perf_counter() - started) * 1000)  # Volcano: the bind call
        assumed = self._cache.bound(bind.pod)
        if assumed is not None:
            TASK_LATENCY.labels("Bound").observe((time.monotonic() - assumed) * 1000)
        await self._events.pod(pod, ev.POD_BOUND, f"Successfully assigned {bind.pod} to {bind.node}", node=bind.node)
        return True

    async def _judge(self, bind: Bind, namespace: str, name: str) -> bool:
        """After a refused bind: whether the stored pod is already bound where the gang wants it."""
        try:
            pod = await self._store.get(Pod, namespace, name)
        except NotFound:
            BINDS.labels(self.instance, "gone").inc()
            return False
        if pod.metadata.uid == bind.uid and pod.spec is not None and pod.spec.node_name == bind.node:
            BINDS.labels(self.instance, "stale").inc()
            return True
        BINDS.labels(self.instance, "conflict").inc()
        return False

"""SHELL: commit a gang (one PodGroup's binds of one cycle) all or nothing.

A gang is first reserved in the placement ledger (ledger_kv.py): on its queue and each ancestor that
has a capability, then on each of its nodes, all or nothing (a refused node rolls back the
reservations already made). Only then are its pods bound, each a compare-and-set on the pod (only an
unbound, undeleted pod of the same uid is bound, the fence the binding subresource gives in
Kubernetes); a pod that could not be bound gives its reservations back. Every write stops at the
membership fence (the ledger's own, and a FencedStore for the pods), so an instance whose lease lapsed
(paused, partitioned) writes nothing. An instance running alone skips the ledger and journals what it
would have reserved; with peers it binds only once they vouch for it (solo.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Mapping
from fractions import Fraction

import structlog

from vc_core.errors import Conflict, Fenced, NotFound
from vc_core.ownership import Ownership
from vc_core.resources import Resources
from vc_core.store import ObjectStore
from vc_proto import events as ev
from vc_proto.core import Pod
from vc_runtime.sharding import FencedStore
from vc_scheduler import ledger
from vc_scheduler.cache import BOUND_BY, SchedulerCache, stored_object
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger_kv import Ledger, node_key, queue_key
from vc_scheduler.metrics import BINDS, GANGS, STAGE, TASK_LATENCY
from vc_scheduler.solo import SoloLedger
from vc_scheduling.framework.decisions import Bind

log = structlog.get_logger(__name__)
BIND_ATTEMPTS = 5
# A gang planned before this instance's lease renewal came late (an overloaded machine: on kube, one
# lapse dropped ~230 planned gangs, each planned again with its PodGroup's phase written Running, then
# Pending, then Running) waits this long for the instance to re-join and settle, then commits if the
# PodGroup is still its own. Safe: the ledger's compare-and-set and the conditional bind refuse what a
# peer placed meanwhile, as they do between peers.
OWN_LAPSE_WAIT_S = 5.0
STANDING_POLL_S = 0.05
Held = list[tuple[str, list[str]]]  # ledger key -> the pod uids reserved on it, for the rollback


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
        solo: SoloLedger | None = None,
    ) -> None:
        self._store = FencedStore(store, ownership)
        self._cache = cache
        self._events = events
        self._own = ownership
        self._work = work
        self._ledger = ledger_kv
        self._solo = solo

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
        alone = self._ledger is not None and self._solo is not None and self._solo.solo()
        try:
            if self._ledger is None:
                reserved = True
            elif alone:
                assert self._solo is not None
                self._solo.journal(self._reservations(gang))  # before any bind is sent (see solo.py)
                reserved = True
            elif not await self._cleared():
                GANGS.labels(self.instance, "unvouched").inc()
                self._forget(gang.binds)
                return
            else:
                reserved = await self.reserve(gang, held)
        except Exception:
            await self._release(held)  # all or nothing, also when a write failed half-way
            raise
        if not reserved:
            GANGS.labels(self.instance, "conflict").inc()
            await self._release(held)
            self._forget(gang.binds)
            return
        outcomes = await asyncio.gather(*(self._bind(b) for b in gang.binds), return_exceptions=True)
        failed = {b.uid for b, ok in zip(gang.binds, outcomes, strict=True) if ok is not True}
        if failed:
            self._forget(tuple(b for b in gang.binds if b.uid in failed))
            await self._release([(key, [u for u in uids if u in failed]) for key, uids in held])
            if alone and self._solo is not None:
                self._solo.forget(frozenset(failed))
        for outcome in outcomes:
            if isinstance(outcome, Fenced):
                raise outcome
        GANGS.labels(self.instance, "ok" if not failed else "partial").inc()

    # -- the ledger --------------------------------------------------------------------------------
    async def _cleared(self) -> bool:
        """Whether every peer vouches for this instance, waiting up to OWN_LAPSE_WAIT_S (a peer that just
        saw it join is writing its journal into the ledger); False: the gang is planned again later."""
        if self._solo is None:
            return True
        deadline = time.monotonic() + OWN_LAPSE_WAIT_S
        while not self._solo.cleared():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(STANDING_POLL_S)  # vouches arrive on the lease watch
        return True

    def _reservations(self, gang: Gang) -> dict[str, dict[str, ledger.Reservation]]:
        """By ledger key, the reservations `reserve` would make for the gang (for the solo journal)."""
        stamp, epoch = time.time(), self._own.epoch
        out: dict[str, dict[str, ledger.Reservation]] = {}
        for b in gang.binds:
            requests = gang.requests.get(b.uid, {})
            made = ledger.reservation(b.pod, requests, instance=self.instance, epoch=epoch, at=stamp)
            out.setdefault(node_key(b.node), {})[b.uid] = made
            for queue, _ in gang.capped_queues:
                out.setdefault(queue_key(queue), {})[b.uid] = made
        return out

    async def reserve(self, gang: Gang, held: Held) -> bool:
        """All of the gang's reservations, its capped queues first, then every node at once; False if any
        refused (what was taken is in `held`, for the caller to roll back)."""
        assert self._ledger is not None
        stamp = time.time()
        for queue, capability in gang.capped_queues:  # in order: a refusal stops the rest
            occupying = gang.view.occupying_queue(queue)
            if not await self._take(gang, queue_key(queue), gang.binds, capability, occupying, None, stamp, held):
                return False
        by_node: dict[str, list[Bind]] = defaultdict(list)
        for b in gang.binds:
            by_node[b.node].append(b)

        async def one(node: str) -> bool:
            binds, capacity = tuple(by_node[node]), gang.capacities.get(node, {})
            return await self._take(
                gang, node_key(node), binds, capacity, gang.view.occupying_node(node), node, stamp, held
            )

        # The nodes are independent keys: reserve on all at once (one round trip, not one per node);
        # the caller rolls back whatever was taken if any node refused.
        results = await asyncio.gather(*(one(node) for node in sorted(by_node)), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return all(results)

    async def _take(
        self,
        gang: Gang,
        key: str,
        binds: tuple[Bind, ...],
        capacity: Mapping[str, Fraction],
        occupying: Mapping[str, Resources],
        node: str | None,
        stamp: float,
        held: Held,
    ) -> bool:
        """Reserve `binds` on one ledger key (a node's, or a queue's when `node` is None); what was
        taken goes into `held` for the caller's all-or-nothing rollback."""
        assert self._ledger is not None
        if not self._own.can_write():  # fail fast; the ledger fences its write as well
            raise Fenced(f"ledger {key}")
        new = {
            b.uid: ledger.reservation(
                b.pod, gang.requests.get(b.uid, {}), instance=self.instance, epoch=self._own.epoch, at=stamp
            )
            for b in binds
        }
        outcome = await self._ledger.reserve(key, new, capacity, occupying, gang.view, node=node)
        if outcome.record is None:
            log.info("gang.refused", podgroup=gang.podgroup, key=key, over=outcome.over)
            return False
        held.append((key, [b.uid for b in binds]))
        return True

    async def _release(self, held: Held) -> None:
        assert self._ledger is not None or not held
        for key, uids in held:
            if uids and self._ledger is not None and self._own.can_write():
                try:
                    await self._ledger.release(key, uids)
                except Exception as exc:  # left for pruning: it reclaims unbound reservations
                    log.info("ledger.release_failed", key=key, error=str(exc))

    # -- the pods ----------------------------------------------------------------------------------
    async def _bind(self, bind: Bind) -> bool:
        namespace, name = bind.pod.split("/", 1)
        stored = self._cache.stored_unbound(bind.pod)
        for attempt in range(BIND_ATTEMPTS):
            pod = stored_object(Pod, stored) if attempt == 0 and stored is not None else None
            if pod is None:
                try:
                    pod = await self._store.get(Pod, namespace, name)
                except NotFound:
                    BINDS.labels(self.instance, "gone").inc()
                    return False
            if pod.metadata.uid != bind.uid or pod.metadata.deletion_timestamp or (pod.spec and pod.spec.node_name):
                if attempt == 0 and stored is not None:
                    continue  # judge by the stored pod, not by our copy
                BINDS.labels(self.instance, "stale").inc()
                # Bound already (by a previous owner) is not a failure of the gang if it is our node.
                return bool(pod.spec and pod.spec.node_name == bind.node and pod.metadata.uid == bind.uid)
            try:
                # One write: the store's bind is fenced on the uid and on the pod being unbound and not
                # deleting (the bound-by annotation and the decision's own, deviceshare's GPU
                # assignment, ride along, as a Binding's annotations do).
                annotations = {**dict(bind.annotations), BOUND_BY: f"{self.instance}/{self._own.epoch}"}
                started = time.perf_counter()
                await self._store.bind(pod, bind.node, annotations=annotations)
            except Conflict:
                continue  # bound or recreated meanwhile (or our copy was stale): re-read and judge
            except NotFound:
                BINDS.labels(self.instance, "gone").inc()
                return False
            BINDS.labels(self.instance, "ok").inc()
            STAGE.labels("Bind").observe((time.perf_counter() - started) * 1000)  # Volcano: the bind call
            assumed = self._cache.bound(bind.pod)
            if assumed is not None:
                TASK_LATENCY.labels("Bound").observe((time.monotonic() - assumed) * 1000)
            await self._events.pod(
                pod, ev.POD_BOUND, f"Successfully assigned {bind.pod} to {bind.node}", node=bind.node
            )
            return True
        BINDS.labels(self.instance, "conflict").inc()
        return False

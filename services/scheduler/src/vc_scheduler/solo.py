"""SHELL: a scheduler instance running alone binds without the placement ledger, and hands over safely.

The ledger (ledger.py) exists so that two instances never bind different pods onto the same full
node. With one instance nothing can race it, and its compare-and-set per node and gang was ~15% of a
scheduler's CPU and one fsynced JetStream write per pod. So an instance whose member set is itself
alone commits gangs without the ledger and journals, in memory, the reservations it would have
written. The hand-over rests on two rules:

- An instance binds without the ledger only while it sees no other live member, and only once it has
  published "I vouch for nobody" in its lease and its lease watch has shown it every member that
  joined before that (so a peer cannot be holding an older vouch of it while it goes solo unseen).
- An instance binds at all (through the ledger) only when every other live member vouches for it.
  A member vouches for a peer once it has seen the peer, stopped binding alone, and written its
  journal (the reservations of the last SETTLED_AFTER_S, bound pods' included) into the ledger.

So a joining instance waits for the sole one to see it, stop and backfill (a lease write and one
compare-and-set per node it recently bound onto), and from then on both plan around the ledger as
always. A member whose lease carries no vouches (an older version, which always writes the ledger)
counts as vouching.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Protocol

import structlog

from vc_core.ownership import Ownership
from vc_scheduler.ledger import SETTLED_AFTER_S, Reservation
from vc_scheduler.ledger_kv import Ledger

log = structlog.get_logger(__name__)
RECHECK_S = 0.5  # membership changes wake the worker; this also covers one it missed while busy
RETRY_S = 1.0  # after a failed backfill or lease write (NATS unavailable)
# One settling round may not hang on a watch or a write that never answers (a cluster losing its
# leader): past this it is given up, not solo, and tried again, so a peer is never kept waiting for ever.
SETTLE_TIMEOUT_S = 5.0
MAX_JOURNAL = 500_000  # reservations kept (a minute of binds at a rate no instance reaches)


class Vouching(Ownership, Protocol):
    """vc_runtime.membership.Membership, as this module uses it."""

    @property
    def vouches_of(self) -> Mapping[str, frozenset[str]]: ...

    async def vouch(self, peers: frozenset[str]) -> int: ...

    async def wait_watched(self, revision: int) -> None: ...


class SoloLedger:
    def __init__(self, membership: Vouching, ledger_kv: Ledger, *, clock: Callable[[], float] = time.time) -> None:
        self._members = membership
        self._ledger = ledger_kv
        self._clock = clock
        self._solo = False
        self._vouched: frozenset[str] | None = None  # what the lease says now (None: not written yet)
        # (when, ledger key, the reservations) of gangs committed alone, oldest first.
        self._journal: deque[tuple[float, str, dict[str, Reservation]]] = deque()
        self._journaled = 0

    # -- what the binder asks ------------------------------------------------------------------------
    def solo(self) -> bool:
        """Whether a gang may be committed without the ledger now."""
        return self._solo and self._members.members == (self._members.instance,)

    def cleared(self) -> bool:
        """Every other live member vouches for this instance (binds through the ledger are safe)."""
        me = self._members.instance
        vouches = self._members.vouches_of
        return all(me in vouches.get(m, (me,)) for m in self._members.members if m != me)

    def journal(self, reservations: Mapping[str, Mapping[str, Reservation]]) -> None:
        """Remember a gang committed alone: by ledger key, the reservations it would have written."""
        now = self._clock()
        for key, by_uid in reservations.items():
            self._journal.append((now, key, dict(by_uid)))
            self._journaled += len(by_uid)
        self._expire(now)

    def forget(self, uids: frozenset[str]) -> None:
        """Pods of a gang committed alone that were not bound after all: no reservation to hand over."""
        for _, _, by_uid in self._journal:
            for uid in uids & by_uid.keys():
                del by_uid[uid]
                self._journaled -= 1

    # -- the worker ----------------------------------------------------------------------------------
    async def run(self, shutdown: asyncio.Event) -> None:
        while not shutdown.is_set():
            try:
                async with asyncio.timeout(SETTLE_TIMEOUT_S):
                    await self._settle()
            except Exception as exc:  # NATS unavailable, or no answer in time: not solo, no new vouch; again
                self._solo = False
                log.warning("solo.settle_failed", error=repr(exc))
                await asyncio.sleep(RETRY_S)
                continue
            try:
                await asyncio.wait_for(self._members.wait_changed(), RECHECK_S)
            except TimeoutError:
                pass

    async def _settle(self) -> None:
        me = self._members.instance
        if self._members.epoch == 0:
            return  # not joined yet
        others = frozenset(m for m in self._members.members if m != me)
        if others:
            self._solo = False  # solo() already says no; this keeps it so when the peers go again
            await self._backfill()
            if self._vouched != others:
                self._vouched = None
                await self._members.vouch(others)
                self._vouched = others
                log.info("solo.vouched", peers=sorted(others))
            return
        if self._solo:
            return
        self._vouched = None  # unknown until the write answers (it may land and still raise)
        revision = await self._members.vouch(frozenset())
        self._vouched = frozenset()
        await self._members.wait_watched(revision)
        if self._members.members == (me,):
            self._solo = True
            log.info("solo.alone", detail="binding without the placement ledger while no other instance runs")

    async def _backfill(self) -> None:
        """Write the journal into the ledger, key by key (entries stay until written)."""
        self._expire(self._clock())
        if not self._journal:
            return
        by_key: dict[str, dict[str, Reservation]] = {}
        for _, key, by_uid in self._journal:
            by_key.setdefault(key, {}).update(by_uid)
        await asyncio.gather(*(self._ledger.add_bound(key, by_uid) for key, by_uid in by_key.items() if by_uid))
        log.info("solo.backfilled", keys=len(by_key), reservations=self._journaled)
        self._journal.clear()
        self._journaled = 0

    def _expire(self, now: float) -> None:
        """Reservations past SETTLED_AFTER_S are kept by no ledger record (every cache knows their pods by
        then); the journal also stays bounded."""
        while self._journal and (now - self._journal[0][0] >= SETTLED_AFTER_S or self._journaled > MAX_JOURNAL):
            self._journaled -= len(self._journal.popleft()[2])

"""SHELL: prune the ledger's queue records this instance owns (rendezvous on the key) of dead reservations,
so those of finished pods and of crashed instances are reclaimed even in queues nobody reserves in right
now."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import structlog

from vc_core.ownership import Ownership
from vc_scheduler.ledger import View
from vc_scheduler.ledger import prune as prune_record
from vc_scheduler.ledger_kv import Ledger

log = structlog.get_logger(__name__)
SWEEP_EVERY_S = 2.0


class LedgerSweeper:
    def __init__(
        self,
        ledger_kv: Ledger,
        ownership: Ownership,
        view: Callable[[], View | None],
        *,
        every_s: float = SWEEP_EVERY_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._ledger = ledger_kv
        self._own = ownership
        self._view = view  # the last cycle's ledger view (None before the first cycle)
        self._every_s = every_s
        self._clock = clock

    async def run(self, shutdown: asyncio.Event) -> None:
        while not shutdown.is_set():
            try:
                async with asyncio.timeout(self._every_s):
                    await shutdown.wait()
                return
            except TimeoutError:
                pass
            await self.sweep_once()

    async def sweep_once(self) -> None:
        view = self._view()
        if view is None or not self._own.can_write():
            return
        now = self._clock()
        for key, record in self._ledger.records():
            if not self._own.owns(f"ledger:{key}"):
                continue
            if prune_record(record, view, now, node=None) is record:
                continue
            try:
                await self._ledger.prune(key, view, node=None)
            except Exception as exc:  # transport boundary: the next sweep tries again
                log.info("ledger.sweep_failed", key=key, error=repr(exc))

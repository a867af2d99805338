"""SHELL: scheduler instances ask each other for loans of room on the nodes they own (lending.py), and
what those nodes have left, by NATS request/reply on `vc.rpc.scheduler.loan.<owner>` (only scheduler
identities may publish or subscribe there). An owner answers from its event loop, where its binder
assumes its own binds, so an answer and its own commits never interleave.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

import msgspec
import structlog

from vc_core.ownership import Ownership
from vc_core.resources import Resources
from vc_proto import subjects
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.gangs import node_capacity
from vc_scheduler.ledger import View
from vc_scheduler.lending import (
    MAX_LOAN_PODS,
    FreeAnswer,
    FreeAsk,
    LoanAnswer,
    LoanAsk,
    LoanBook,
    LoanMessage,
    LoanPod,
    LoanReturn,
    free_answer,
    invalid,
    read_free,
)
from vc_scheduler.metrics import LOANS

log = structlog.get_logger(__name__)
ASK_TIMEOUT_S: Final = 2.0
# A borrower binds within this long of the grant or not at all: the owner keeps an unbound loan for
# ledger.ABANDONED_AFTER_S, well beyond it.
USE_WITHIN_S: Final = 10.0

_encoder = msgspec.json.Encoder()
_message = msgspec.json.Decoder(LoanMessage)
_answer = msgspec.json.Decoder(LoanAnswer)
_free = msgspec.json.Decoder(FreeAnswer)


class Lending(Protocol):
    """What the desk needs of the instance's standing among its peers (peers.Several)."""

    @property
    def book(self) -> LoanBook: ...

    def commits_on(self, node: str) -> bool: ...


class LoanDesk:
    def __init__(
        self,
        nc: Any,
        cache: SchedulerCache,
        *,
        ownership: Ownership,
        lending: Lending,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._nc = nc
        self._cache = cache
        self._own = ownership
        self._lending = lending
        self._clock = clock

    @property
    def instance(self) -> str:
        return self._own.instance

    # -- the owner's side --------------------------------------------------------------------------
    async def serve(self, shutdown: asyncio.Event) -> None:
        sub = await self._nc.subscribe(subjects.scheduler_loan_subject(self.instance), cb=self._on_message)
        try:
            await shutdown.wait()
        finally:
            with contextlib.suppress(Exception):  # the connection may be gone already
                await sub.unsubscribe()

    async def _on_message(self, msg: Any) -> None:
        answer: LoanAnswer | FreeAnswer
        try:
            message = _message.decode(msg.data)
        except ValueError as exc:
            answer = LoanAnswer(False, f"not a loan message: {exc}")
        else:
            match message:
                case LoanReturn(borrower=borrower, uids=uids):
                    self._lending.book.give_back(borrower, uids[:MAX_LOAN_PODS])
                    return
                case LoanAsk():
                    answer = self.answer(message)
                case FreeAsk():
                    answer = self.free(message)
        if msg.reply:
            with contextlib.suppress(Exception):  # the asker gave up (timed out): its loan lapses here
                await msg.respond(_encoder.encode(answer))

    def answer(self, ask: LoanAsk) -> LoanAnswer:
        """Grant the ask if this instance may commit on each of its nodes now and they take its pods."""
        if (why := invalid(ask)) is not None:
            return LoanAnswer(False, why)
        if ask.borrower == self.instance:
            return LoanAnswer(False, "borrower: an instance does not lend to itself")
        if not self._own.can_write():
            return LoanAnswer(False, "the owner's lease has lapsed")
        if not self._cache.holds_covered():
            return LoanAnswer(False, "the owner is reading its shards' pods and PodGroups (the members changed)")
        capacities = {}
        for name in {p.node for p in ask.pods}:
            node = self._cache.nodes.get(name)
            if node is not None and self._lending.commits_on(name):
                capacities[name] = node_capacity(node)
        view = self._view()
        answer = self._lending.book.grant(ask, capacities, self._cache.occupying, view, self._clock())
        LOANS.labels(self.instance, "granted" if answer.granted else "refused").inc()
        if not answer.granted:
            log.info("loan.refused", borrower=ask.borrower, reason=answer.reason)
        return answer

    def free(self, ask: FreeAsk) -> FreeAnswer:
        """What each node this instance may lend on has left (none while its lease has lapsed, or its
        cache reads its shards' pods and PodGroups)."""
        if ask.borrower == self.instance or not self._own.can_write() or not self._cache.holds_covered():
            return FreeAnswer([])
        view = self._view()
        book, now = self._lending.book, self._clock()
        left = {
            name: book.left(name, node_capacity(node), self._cache.occupying(name), view, now)
            for name, node in self._cache.nodes.items()
            if self._lending.commits_on(name)
        }
        return free_answer(left)

    def _view(self) -> View:
        return self._cache.index.view(
            gone=self._cache.gone(),
            live=frozenset(self._own.members),
            instance=self.instance,
            epoch=self._own.epoch,
        )

    # -- the borrower's side -----------------------------------------------------------------------
    async def borrow(self, owner: str, pods: list[LoanPod]) -> LoanAnswer:
        ask = LoanAsk(self.instance, self._own.epoch, pods)
        try:
            msg = await self._nc.request(
                subjects.scheduler_loan_subject(owner), _encoder.encode(ask), timeout=ASK_TIMEOUT_S
            )
            return _answer.decode(msg.data)
        except Exception as exc:  # no answer (gone, busy, NATS down) or a garbled one: no loan
            return LoanAnswer(False, f"owner {owner} did not answer: {exc!r}")

    async def free_on(self, owners: Iterable[str]) -> dict[str, dict[str, Resources]]:
        """By owner, what each of its nodes has left, as it answers; an owner that does not answer (gone,
        busy, NATS down) or answers garbled is left out: its nodes are not borrowed this time."""
        asked = sorted(set(owners) - {self.instance})
        answers = await asyncio.gather(*(self._free_of(owner) for owner in asked))
        return {owner: left for owner, left in zip(asked, answers, strict=True) if left is not None}

    async def _free_of(self, owner: str) -> dict[str, Resources] | None:
        try:
            msg = await self._nc.request(
                subjects.scheduler_loan_subject(owner), _encoder.encode(FreeAsk(self.instance)), timeout=ASK_TIMEOUT_S
            )
            return read_free(_free.decode(msg.data))
        except Exception as exc:
            log.info("loan.free_unanswered", owner=owner, error=repr(exc))
            return None

    async def give_back(self, owner: str, uids: list[str]) -> None:
        """Best effort: a loan not given back lapses at the owner (lending.py)."""
        try:
            await self._nc.publish(
                subjects.scheduler_loan_subject(owner), _encoder.encode(LoanReturn(self.instance, uids))
            )
        except Exception as exc:
            log.info("loan.give_back_failed", owner=owner, error=repr(exc))

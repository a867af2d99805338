"""An instance alone binds without the placement ledger; the hand-over to peers (solo.py): it goes solo
only after publishing that it vouches for nobody and seeing every member that joined before; a peer
appearing stops it at once; it vouches for the peer only after writing its journal into the ledger;
and it binds with peers only once every one of them vouches for it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from tests.unit.scheduler_service.test_binder_standing import Standing, _binder_with_a_pod, _node_of
from vc_scheduler import binder as binder_module
from vc_scheduler import solo as solo_module
from vc_scheduler.ledger import SETTLED_AFTER_S, Reservation, reservation
from vc_scheduler.ledger_kv import node_key
from vc_scheduler.solo import SoloLedger


class Members(Standing):
    """Membership as solo.py uses it, with lease writes and the watch the test drives."""

    def __init__(self) -> None:
        super().__init__()
        self.vouches_of: dict[str, frozenset[str]] = {}
        self.published: list[frozenset[str]] = []
        self.revision = 10
        self.watched_revision = 0
        self.watched = asyncio.Event()

    async def vouch(self, peers: frozenset[str]) -> int:
        self.published.append(peers)
        self.revision += 1
        return self.revision

    async def wait_watched(self, revision: int) -> None:
        while self.watched_revision < revision:
            self.watched.clear()
            await self.watched.wait()

    def watch_up_to(self, revision: int) -> None:
        self.watched_revision = revision
        self.watched.set()


class RecordingLedger:
    def __init__(self) -> None:
        self.added: dict[str, dict[str, Reservation]] = {}
        self.reserved = 0

    async def add_bound(self, key: str, reservations: Mapping[str, Reservation]) -> None:
        self.added.setdefault(key, {}).update(reservations)

    async def reserve(self, *args: object, **kwargs: object) -> object:
        self.reserved += 1
        raise AssertionError("a solo commit must not reserve in the ledger")


def _solo(members: Members, ledger: RecordingLedger, clock: list[float] | None = None) -> SoloLedger:
    now = clock or [1000.0]
    return SoloLedger(members, ledger, clock=lambda: now[0])  # type: ignore[arg-type]


def _reservations(uid: str, node: str, at: float = 1000.0) -> dict[str, dict[str, Reservation]]:
    return {node_key(node): {uid: reservation(f"ns/{uid}", {}, instance="s0", epoch=1, at=at)}}


@pytest.mark.parametrize(
    ("seen", "goes_solo"),
    [(("s0",), True), (("s0", "s1"), False)],  # alone; a member whose lease came before the vouch's
)
def test_it_goes_solo_only_once_its_watch_has_passed_its_vouch_for_nobody_with_no_one_else_seen(
    seen: tuple[str, ...], goes_solo: bool
) -> None:
    async def scenario() -> None:
        members, ledger = Members(), RecordingLedger()
        solo = _solo(members, ledger)
        settling = asyncio.create_task(solo._settle())
        await asyncio.sleep(0.01)
        assert members.published == [frozenset()]
        assert not solo.solo()  # the watch has not shown the members that joined before the vouch
        members.members = seen
        members.watch_up_to(members.revision)
        await settling
        assert solo.solo() is goes_solo

    asyncio.run(scenario())


def test_a_peer_stops_solo_at_once_and_is_vouched_for_only_after_the_journal_is_in_the_ledger() -> None:
    async def scenario() -> None:
        members, ledger = Members(), RecordingLedger()
        solo = _solo(members, ledger)
        members.watch_up_to(99)
        await solo._settle()
        solo.journal(_reservations("u1", "n1"))
        solo.journal(_reservations("u2", "n1") | _reservations("u3", "n2"))
        solo.forget(frozenset({"u3"}))  # its bind failed: nothing to hand over
        members.members = ("s0", "s1")
        assert not solo.solo()  # before the worker even looks
        await solo._settle()
        assert set(ledger.added) == {node_key("n1")}
        assert set(ledger.added[node_key("n1")]) == {"u1", "u2"}
        assert members.published[-1] == frozenset({"s1"})
        members.members = ("s0",)  # the peer left: solo again only after a new vouch for nobody
        assert not solo.solo()

    asyncio.run(scenario())


def test_journal_entries_older_than_any_ledger_record_keeps_are_not_handed_over() -> None:
    async def scenario() -> None:
        members, ledger = Members(), RecordingLedger()
        clock = [1000.0]
        solo = _solo(members, ledger, clock)
        solo.journal(_reservations("old", "n1"))
        clock[0] += SETTLED_AFTER_S + 1
        solo.journal(_reservations("new", "n1", at=clock[0]))
        members.members = ("s0", "s1")
        await solo._settle()
        assert set(ledger.added[node_key("n1")]) == {"new"}

    asyncio.run(scenario())


def test_binds_with_peers_wait_for_every_peer_to_vouch_and_an_older_peer_counts_as_vouching() -> None:
    members = Members()
    solo = _solo(members, RecordingLedger())
    members.members = ("s0", "s1", "s2")
    members.vouches_of = {"s1": frozenset({"s0"}), "s2": frozenset()}
    assert not solo.cleared()
    members.vouches_of["s2"] = frozenset({"s0", "s1"})
    assert solo.cleared()
    del members.vouches_of["s2"]  # its lease has no vouches: a version that always writes the ledger
    assert solo.cleared()


def test_a_solo_commit_binds_without_the_ledger_and_journals_the_reservation() -> None:
    async def scenario() -> None:
        members, ledger = Members(), RecordingLedger()
        binder, store, gang = await _binder_with_a_pod(members)
        solo = _solo(members, ledger)
        members.watch_up_to(99)
        await solo._settle()
        binder._ledger, binder._solo = ledger, solo  # type: ignore[assignment]
        await binder.commit(gang, planned_epoch=1)
        assert await _node_of(store) == "n1"
        assert ledger.reserved == 0
        members.members = ("s0", "s1")
        await solo._settle()
        assert set(ledger.added[node_key("n1")]) == {gang.binds[0].uid}

    asyncio.run(scenario())


def test_a_commit_a_peer_has_not_vouched_for_binds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(binder_module, "OWN_LAPSE_WAIT_S", 0.1)

    async def scenario() -> None:
        members, ledger = Members(), RecordingLedger()
        binder, store, gang = await _binder_with_a_pod(members)
        members.members = ("s0", "s1")
        members.vouches_of = {"s1": frozenset()}
        binder._ledger, binder._solo = ledger, _solo(members, ledger)  # type: ignore[assignment]
        await binder.commit(gang, planned_epoch=1)
        assert await _node_of(store) is None
        assert ledger.reserved == 0

    asyncio.run(scenario())


def test_the_journal_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solo_module, "MAX_JOURNAL", 3)
    solo = _solo(Members(), RecordingLedger())
    for i in range(10):
        solo.journal(_reservations(f"u{i}", "n1"))
    assert solo._journaled <= 3


def test_a_settling_round_that_hangs_is_given_up_and_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(solo_module, "SETTLE_TIMEOUT_S", 0.05)
    monkeypatch.setattr(solo_module, "RETRY_S", 0.01)

    async def scenario() -> None:
        members = Members()
        solo = _solo(members, RecordingLedger())
        stop = asyncio.Event()
        worker = asyncio.create_task(solo.run(stop))
        await asyncio.sleep(0.2)  # the watch never shows the vouch: rounds time out, not solo
        assert not solo.solo() and len(members.published) >= 2
        members.members = ("s0", "s1")  # a peer: the worker is not stuck, it vouches for it
        await asyncio.sleep(0.2)
        assert members.published[-1] == frozenset({"s1"})
        stop.set()
        await worker

    asyncio.run(scenario())

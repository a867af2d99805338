"""A renewal slower than the lease it renews fences writes for a moment; owners are told when it
ends (found by `make chaos`: a job controller dropped a job's requests while fenced and, with no
membership change to follow, never looked at the job again: it kept 1 of its 2 pods forever)."""

from __future__ import annotations

import asyncio

from vc_runtime.membership import LOOP_STALL_S, Membership


class SlowLeases:
    """A lease bucket whose update takes `takes_s` of the membership's clock."""

    def __init__(self, clock: list[float], takes_s: float) -> None:
        self.clock, self.takes_s, self.revision = clock, takes_s, 10

    async def update(self, key: str, value: bytes, last: int | None = None) -> int:
        self.clock[0] += self.takes_s
        self.revision += 1
        return self.revision


def _member(clock: list[float], takes_s: float) -> Membership:
    member = Membership(None, group="g", instance="a", ttl_s=3.0, clock=lambda: clock[0])  # type: ignore[arg-type]
    member._kv = SlowLeases(clock, takes_s)  # type: ignore[assignment]
    member.epoch, member._revision, member._deadline, member._settled_at = 7, 10, 3.0, 0.0
    member._settle_announced = True
    member._seen = {"a": clock[0]}
    member.members = ("a",)
    return member


def test_owners_are_told_when_a_renewal_outlived_the_lease() -> None:
    clock = [2.5]  # renewing half a second before the lease ends; the update takes a second
    member = _member(clock, takes_s=1.0)
    seen_fenced: list[bool] = []
    member._kv.update = _spy(member._kv.update, lambda: seen_fenced.append(not member.can_write()))  # type: ignore[method-assign, union-attr]
    asyncio.run(member._renew())
    assert seen_fenced == [True]  # writes were fenced while the update was under way
    assert member.can_write()  # and are not any more
    assert member._changed.is_set()  # owners hear of it


def test_a_timely_renewal_is_no_news() -> None:
    clock = [1.0]
    member = _member(clock, takes_s=0.1)
    asyncio.run(member._renew())
    assert member.can_write()
    assert not member._changed.is_set()


def test_the_next_renewal_is_timed_from_when_the_last_was_sent() -> None:
    clock = [1.0]  # a ttl of 3 s: renewals every second
    member = _member(clock, takes_s=1.8)  # an acknowledgement 1.8 s late (a loaded machine)
    asyncio.run(member._renew())
    assert clock[0] == 2.8 and member._deadline == 4.0
    # Due at 2.0, so at once. Counted from the answer it would be sent at 3.8 and, as slow, answered at
    # 5.6: the lease (ending at 4.0) would lapse while it was under way.
    assert member.next_renewal_in() == 0.0
    clock[0] = 3.0
    member._kv.takes_s = 0.1  # type: ignore[union-attr]
    asyncio.run(member._renew())
    assert member.can_write() and member._deadline == 6.0
    assert abs(member.next_renewal_in() - 0.9) < 1e-9  # a timely one: a third of the ttl after sending


def test_a_hung_service_loop_gets_its_lease_renewed_no_more() -> None:
    """Renewals run on their own thread; the service's loop ticks a heartbeat, and once it has been silent
    for LOOP_STALL_S (hung, not busy) the lease is let lapse so that peers take the keys over."""
    clock = [2.0]
    member = _member(clock, takes_s=0.1)
    member._loop_seen = clock[0] - LOOP_STALL_S / 2  # a long synchronous stretch: still renewed
    assert not member._service_stalled()
    member._loop_seen = clock[0] - LOOP_STALL_S - 0.1
    assert member._service_stalled()
    assert member.next_renewal_in() > 0  # looked at again later, not in a busy loop
    member._loop_seen = clock[0]  # it ticks again
    assert not member._service_stalled()


def _spy(update, after):  # type: ignore[no-untyped-def]
    async def spied(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = await update(*args, **kwargs)
        after()
        return result

    return spied

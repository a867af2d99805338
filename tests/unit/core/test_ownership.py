"""Who owns what among members: rendezvous hashing, and slots dealt out evenly (balanced_owners)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from vc_core.ownership import balanced_owners, rendezvous_owner

names = st.lists(st.text("abcdefghij0123456789-", min_size=1, max_size=12), min_size=1, max_size=9, unique=True)


@given(names, st.integers(min_value=1, max_value=128))
def test_every_slot_has_one_member_and_no_member_more_than_its_even_share(members: list[str], slots: int) -> None:
    owners = balanced_owners(slots, tuple(members))
    assert len(owners) == slots
    assert set(owners) <= set(members)
    counts = Counter(owners)
    even = slots // len(members)
    assert all(even <= counts[m] <= even + 1 for m in members)
    assert sum(1 for m in members if counts[m] > even) == slots % len(members)


@given(names, st.randoms(use_true_random=False))
def test_the_same_members_in_any_order_give_the_same_owners(members: list[str], rnd: object) -> None:
    shuffled = list(members)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert balanced_owners(64, tuple(members)) == balanced_owners(64, tuple(shuffled))


def test_64_slots_over_two_to_five_members_are_within_one_of_even() -> None:
    """Plain rendezvous over 64 slots leaves members several slots apart; dealt out, one at most."""
    members = ("sched-a", "sched-b", "sched-c", "sched-d", "sched-e")
    for n in range(2, 6):
        counts = Counter(balanced_owners(64, members[:n])).values()
        assert max(counts) - min(counts) <= 1


def test_a_member_joining_moves_few_slots_besides_its_own() -> None:
    """Most slots stay where they were: those the newcomer takes, and a few the caps push along."""
    before = balanced_owners(64, ("a", "b", "c"))
    after = balanced_owners(64, ("a", "b", "c", "d"))
    moved = [slot for slot in range(64) if before[slot] != after[slot]]
    taken = [slot for slot in moved if after[slot] == "d"]
    assert len(taken) == 16
    assert len(moved) - len(taken) <= 16


def test_no_members_own_nothing() -> None:
    assert balanced_owners(64, ()) == ()
    assert rendezvous_owner("k", ()) is None

"""One writer per key: the ownership port, and the rendezvous hash that assigns keys to live members.

`vc_runtime.membership.Membership` is the production implementation (leases, epochs, the write
fence); `vc_runtime.sharding.SoleOwner` serves a single instance and unit tests. The hash lives here,
pure, so code that plans on the member list (the scheduler's sharding, in a worker thread) needs no
transport to compute who owns what.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Protocol, cast


class Ownership(Protocol):
    instance: str  # this instance's name among the members
    epoch: int  # grows each time the instance (re-)joins; writes carry it
    members: tuple[str, ...]  # the live members, sorted

    def owns(self, key: str) -> bool:
        """This instance is the key's single writer right now."""
        ...

    def can_write(self) -> bool:
        """The write fence: False once this instance's lease may have lapsed."""
        ...

    async def wait_changed(self) -> None:
        """Until the member set (or this instance's standing) changes next."""
        ...


def _score(member: str, key: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{member}\x00{key}".encode(), digest_size=8).digest(), "big")


def rendezvous_owner(key: str, members: tuple[str, ...]) -> str | None:
    """The member with the highest hash of (member, key); stable as other members come and go (only
    the keys of a member that leaves move, and a member that joins takes only its own share)."""
    best, best_score = None, -1
    for member in members:
        score = _score(member, key)
        if score > best_score:
            best, best_score = member, score
    return best


@functools.lru_cache(maxsize=256)
def balanced_owners(slots: int, members: tuple[str, ...]) -> tuple[str, ...]:
    """The owner of each of `slots` fixed slots (index = slot), dealt out evenly: every member owns
    floor(slots / members) or one more, by rendezvous preference. Every (member, slot) pair is ranked
    by its rendezvous hash, and from the highest down each slot goes to its member while that member
    has room (the first `slots % members` members to fill up may take one more). The same member set
    gives the same answer in every process; a member that joins or leaves moves a few slots beyond
    its own share (the caps push some down a member's list).

    Plain rendezvous over few slots is uneven: over 64 slots two members typically get 28 and 36 (a
    standard deviation of 4), and the larger share sets the pace of everything sharded by slot."""
    if not members:
        return ()
    ordered = sorted(set(members))
    floor, extra = divmod(slots, len(ordered))
    pairs = sorted(
        ((_score(member, f"slot:{slot}"), member, slot) for member in ordered for slot in range(slots)),
        reverse=True,
    )
    owners: list[str | None] = [None] * slots
    held = dict.fromkeys(ordered, 0)
    for _, member, slot in pairs:
        if owners[slot] is not None:
            continue
        if held[member] == floor:
            if not extra:
                continue
            extra -= 1  # this member takes one of the slots left over from an even split
        elif held[member] > floor:
            continue
        owners[slot] = member
        held[member] += 1
    # Every slot has one: the members' room adds up to exactly `slots`, and a slot passed over found
    # each member full, which they all stay.
    return cast(tuple[str, ...], tuple(owners))

"""One writer per key: the ownership port, and the rendezvous hash that assigns keys to live members.

`vc_runtime.membership.Membership` is the production implementation (leases, epochs, the write
fence); `vc_runtime.sharding.SoleOwner` serves a single instance and unit tests. The hash lives here,
pure, so code that plans on the member list (the scheduler's sharding, in a worker thread) needs no
transport to compute who owns what.
"""

from __future__ import annotations

import hashlib
from typing import Protocol


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


def rendezvous_owner(key: str, members: tuple[str, ...]) -> str | None:
    """The member with the highest hash of (member, key); stable as other members come and go (only
    the keys of a member that leaves move, and a member that joins takes only its own share)."""
    best, best_score = None, -1
    for member in members:
        digest = hashlib.blake2b(f"{member}\x00{key}".encode(), digest_size=8).digest()
        score = int.from_bytes(digest, "big")
        if score > best_score:
            best, best_score = member, score
    return best

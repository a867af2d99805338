"""SHELL: what one scheduler instance says to and knows of the others, as its loop needs it: the member
set it plans under and the partition that follows (share.Partition), and the pods whose binds other
instances have in flight (their ledger reservations). Two implementations behind one port:

- `Alone`: no other instance can run (no ledger): the partition is the whole cluster;
- `Several`: the ledger bucket (ledger_kv.Ledger): announcements of the member sets each instance plans
  under, and reservations. It also serves an instance that is alone for now: others may join.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final, Protocol

import structlog

from vc_proto.subjects import unescape_token
from vc_scheduler.ledger import View
from vc_scheduler.ledger_kv import Ledger
from vc_scheduler.share import Partition, reserved_pods

log = structlog.get_logger(__name__)
ANNOUNCE_TIMEOUT_S: Final = 5.0
NODE_PREFIX: Final = "node."  # ledger_kv.node_key
# An announcement of an instance that is no longer a member is removed once this old: longer than any
# lease lasts unrenewed, so its owner is fenced by then, and than a joining instance's lease takes to be
# seen here.
ANNOUNCED_STALE_S: Final = 30.0


class Peers(Protocol):
    async def partition(self, members: tuple[str, ...]) -> Partition:
        """Who owns what for the next cycle (the same object while nothing changed); called between
        cycles only."""
        ...

    def reserved(self, view: View) -> dict[str, tuple[str, str]]:
        """Pod uid -> (pod key, node) of other instances' binds in flight, judged against `view`."""
        ...

    def changed(self) -> bool:
        """Whether another instance's reservations or announcement changed since `settle`."""
        ...

    def settle(self) -> None:
        """A cycle starts: it reads the others as they are now."""
        ...

    async def leave(self) -> None:
        """The instance stops: what it claimed goes to the others now."""
        ...


class Alone:
    def __init__(self, instance: str) -> None:
        self._partition = Partition(instance, (instance,))

    async def partition(self, members: tuple[str, ...]) -> Partition:
        return self._partition

    def reserved(self, view: View) -> dict[str, tuple[str, str]]:
        return {}

    def changed(self) -> bool:
        return False

    def settle(self) -> None:
        return None

    async def leave(self) -> None:
        return None


class Several:
    def __init__(self, ledger: Ledger, *, clock: Callable[[], float] = time.time) -> None:
        self.ledger = ledger
        self.instance = ledger.instance
        self._clock = clock
        self._announced: tuple[str, ...] = ()  # the member set last announced
        self._partition: Partition | None = None

    async def partition(self, members: tuple[str, ...]) -> Partition:
        """PodGroups and nodes by the member set this instance announced it plans under, less the nodes
        other instances' announcements claim (share.Partition). A new member set is announced here,
        between cycles, before the first cycle that plans under it; should that fail, the cycle plans
        under the set announced before (nodes move only once announced). Every other announcement
        counts, also one of an instance this one has not seen join yet; one of an instance that left is
        removed once it is older than ANNOUNCED_STALE_S."""
        if members != self._announced:
            try:
                async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                    await self.ledger.announce(members)
                self._announced = members
            except Exception as exc:  # NATS unavailable: plan under the last announced set; again next cycle
                log.warning("partition.announce_failed", members=list(members), error=repr(exc))
        await self._retract_stale(frozenset(members))
        claims = {m: a.members for m, a in self.ledger.announced.items() if m != self.instance}
        mine = self._announced or (self.instance,)
        held = self._partition
        if held is None or (held.members, held.claims) != (mine, claims):
            held = self._partition = Partition(self.instance, mine, claims)
            self.ledger.concerns = _own_nodes_keys(held)
        return held

    def reserved(self, view: View) -> dict[str, tuple[str, str]]:
        return reserved_pods(self.ledger.records(), view, self._clock())

    def changed(self) -> bool:
        return self.ledger.changed.is_set()

    def settle(self) -> None:
        self.ledger.changed.clear()

    async def leave(self) -> None:
        if not self._announced:
            return
        # Best effort (NATS may be gone): the others remove it after ANNOUNCED_STALE_S anyway.
        try:
            async with asyncio.timeout(1.0):
                await self.ledger.retract(self.instance)
        except Exception as exc:
            log.info("partition.retract_on_exit_failed", error=repr(exc))

    async def _retract_stale(self, live: frozenset[str]) -> None:
        """Remove the announcements of instances that left (their lease ended) and announced nothing for
        ANNOUNCED_STALE_S: their claims would keep their nodes from everyone. Younger ones stay: the
        instance may have just joined, its lease not yet seen here."""
        now = self._clock()
        for member, made in list(self.ledger.announced.items()):
            if member == self.instance or member in live or now - made.at < ANNOUNCED_STALE_S:
                continue
            try:
                async with asyncio.timeout(ANNOUNCE_TIMEOUT_S):
                    await self.ledger.retract(member, made.revision)
                log.info("partition.retracted", member=member)
            except Exception as exc:  # the next cycle tries again
                log.warning("partition.retract_failed", member=member, error=repr(exc))


def _own_nodes_keys(partition: Partition) -> Callable[[str], bool]:
    """Ledger keys whose reservations by others a cycle over the partition's share plans around: its own
    nodes' (alone: every key)."""
    if partition.alone():
        return lambda _key: True

    def concerns(key: str) -> bool:
        return key.startswith(NODE_PREFIX) and partition.owns_node(unescape_token(key.removeprefix(NODE_PREFIX)))

    return concerns

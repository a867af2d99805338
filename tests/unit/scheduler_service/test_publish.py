"""An instance's shard records, as peers.Several writes them: what is not written is written next time."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from fractions import Fraction

from prometheus_client import REGISTRY

from tests.unit.scheduler_service.service_builders import group, pod
from vc_proto.pod_shards import shard_of_key
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.ledger import Record, reservation
from vc_scheduler.ledger_kv import queue_key
from vc_scheduler.peers import Several
from vc_scheduler.shard_records import sums_key, used_key


class Pods:
    def followed_revision(self) -> int:
        return 7

    async def last_revision(self) -> int:
        return 7

    async def followed(self, revision: int, timeout_s: float) -> bool:
        return True


class FlakyLedger:
    """Refuses every write until told otherwise (NATS unavailable), then records what it is given."""

    instance = "a"

    def __init__(self) -> None:
        self.up = False
        self.written: list[tuple[str, bytes | None]] = []
        # A capped queue's key, with this instance's reservation of a pod it bound and another's.
        self.queue = Record(
            {
                "uid-p0": reservation("ns/p0", {"cpu": Fraction(1)}, instance="a", epoch=1, at=1.0),
                "uid-x": reservation("ns/x", {"cpu": Fraction(1)}, instance="b", epoch=1, at=1.0),
            }
        )
        self.released: list[tuple[str, list[str]]] = []

    async def write_records(self, records: list[tuple[str, bytes | None]]) -> list[str]:
        if not self.up:
            raise ConnectionError("no servers available")
        self.written.extend(records)
        return []

    def records(self) -> list[tuple[str, Record]]:
        return [(queue_key("q"), self.queue)]

    async def release(self, key: str, uids: list[str]) -> None:
        self.released.append((key, uids))


def written(outcome: str) -> float:
    return (
        REGISTRY.get_sample_value("tephra_scheduler_shard_records_total", {"instance": "a", "outcome": outcome}) or 0.0
    )


def test_records_not_written_for_want_of_nats_are_written_at_the_next_call() -> None:
    """... and the instance takes back its reservations of the pods they count only once they are written."""
    before = written("written"), written("failed")
    ledger = FlakyLedger()
    peers = Several(ledger, pods=Pods())  # type: ignore[arg-type]
    index = ClusterIndex()
    index.stored_podgroup("ns/g", replace(group("g", "q"), phase="Running"))
    index.stored_pod("ns/p0", pod("p0", "g", node="n1", phase="Running"))
    shard = shard_of_key("ns/g")
    assert index.counts("uid-p0")

    async def publish() -> None:
        await peers.publish(index, frozenset({shard}))

    asyncio.run(publish())
    assert ledger.written == [] and ledger.released == []
    ledger.up = True
    asyncio.run(publish())
    assert [key for key, _ in ledger.written] == [sums_key(shard, "q"), used_key(shard)]
    assert ledger.released == [(queue_key("q"), ["uid-p0"])]  # its own, counted; not b's
    asyncio.run(publish())  # (nothing moved since)
    assert len(ledger.written) == 2
    assert (written("written") - before[0], written("failed") - before[1]) == (2, 2)  # (counted per record)

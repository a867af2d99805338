"""An instance's shard records, as peers.Several writes them: what is not written is written next time."""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY

from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.peers import Several
from vc_scheduler.shard_records import sums_key


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

    async def write_records(self, records: list[tuple[str, bytes | None]]) -> list[str]:
        if not self.up:
            raise ConnectionError("no servers available")
        self.written.extend(records)
        return []


def written(outcome: str) -> float:
    return (
        REGISTRY.get_sample_value("tephra_scheduler_shard_records_total", {"instance": "a", "outcome": outcome}) or 0.0
    )


def test_records_not_written_for_want_of_nats_are_written_at_the_next_call() -> None:
    before = written("written"), written("failed")
    ledger = FlakyLedger()
    peers = Several(ledger, pods=Pods())  # type: ignore[arg-type]
    index = ClusterIndex()
    index.tally.count(3, "q", {"cpu": 1.0}, {"cpu": 1.0}, 1, 1, 1, namespace="ns")

    async def publish() -> None:
        await peers.publish(index, frozenset({3}))

    asyncio.run(publish())
    assert ledger.written == []
    ledger.up = True
    asyncio.run(publish())
    assert [key for key, _ in ledger.written] == [sums_key(3, "q")]
    asyncio.run(publish())  # (nothing moved since)
    assert len(ledger.written) == 1
    assert (written("written") - before[0], written("failed") - before[1]) == (1, 1)  # (counted per record)

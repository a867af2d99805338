"""An instance's shard records, as peers.Several writes them: what is not written is written next time."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from fractions import Fraction

import msgspec
from prometheus_client import REGISTRY

from tests.unit.scheduler_service.service_builders import FixedPods, group, pod
from vc_core.ownership import balanced_owners
from vc_proto.pod_shards import SHARDS, shard_of_key
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.ledger import Record, View, reservation
from vc_scheduler.ledger_kv import Announcement, queue_key
from vc_scheduler.peers import Several
from vc_scheduler.shard_records import AwayNodes, ShardUse, away_key, node_group, sums_key, used_key
from vc_scheduler.share import Partition


class FlakyLedger:
    """Refuses every write until told otherwise (NATS unavailable), then records what it is given."""

    instance = "a"

    def __init__(self) -> None:
        self.announced: dict[str, Announcement] = {}
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
    peers = Several(ledger, pods=FixedPods())  # type: ignore[arg-type]
    index = ClusterIndex()
    index.stored_podgroup("ns/g", replace(group("g", "q"), phase="Running"))
    index.stored_pod("ns/p0", pod("p0", "g", node="n1", phase="Running"))
    shard = shard_of_key("ns/g")
    assert index.counts("uid-p0", frozenset({shard}))

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


def test_a_shard_another_instance_still_claims_is_not_written_until_its_claim_goes() -> None:
    """The shard's previous owner writes it until it announces a set that gives it away: a record this
    instance wrote meanwhile could come before the previous owner's last, and be overwritten by it."""
    ledger = FlakyLedger()
    ledger.up = True
    peers = Several(ledger, pods=FixedPods())  # type: ignore[arg-type]
    index = ClusterIndex()
    index.stored_podgroup("ns/g", replace(group("g", "q"), phase="Running"))
    index.stored_pod("ns/p0", pod("p0", "g"))
    shard = shard_of_key("ns/g")
    owners = balanced_owners(SHARDS, ("a", "b"))
    claimer = owners[shard] if owners[shard] != "a" else "b"
    members = ("a", "b") if owners[shard] == claimer else ("b",)  # (a set giving `claimer` the shard)
    ledger.announced[claimer] = Announcement(members, 1.0)
    asyncio.run(peers.publish(index, frozenset({shard})))
    assert ledger.written == []
    del ledger.announced[claimer]  # (it announced a set without the shard, or left)
    asyncio.run(peers.publish(index, frozenset({shard})))
    assert [key for key, _ in ledger.written] == [sums_key(shard, "q")]


class AnnouncingLedger(FlakyLedger):
    """Records the order of record writes and announcements."""

    def __init__(self) -> None:
        super().__init__()
        self.up = True
        self.calls: list[tuple[str, object]] = []

    async def write_records(self, records: list[tuple[str, bytes | None]]) -> list[str]:
        self.calls.append(("records", dict(records)))
        return await super().write_records(records)

    async def announce(self, members: tuple[str, ...], *, pods_revision: int = 0) -> None:
        self.calls.append(("announce", members))
        self.announced[self.instance] = Announcement(members, 1.0, pods_revision=pods_revision)

    async def retract(self, instance: str, revision: int | None = None) -> None:
        self.announced.pop(instance, None)

    def records(self) -> list[tuple[str, Record]]:
        return []


def test_an_instance_writes_its_shards_records_as_the_new_set_counts_them_before_it_announces_it() -> None:
    """A node's new owner plans there once it has read the old owner's announcement, and a shard's new
    owner writes it only then: both must find the old owner's pods written as the new set counts them
    (a pod of a shard that moves, on a node its new owner will not own, is that shard's `away`)."""
    ledger = AnnouncingLedger()
    peers = Several(ledger, pods=FixedPods())  # type: ignore[arg-type]
    view = View(instance="a", epoch=1)
    index = ClusterIndex()
    joined = ("a", "b")
    mine_after, theirs_after = Partition("a", joined), Partition("b", joined)
    name = next(f"g{i}" for i in range(1000) if not mine_after.owns(f"ns/g{i}"))  # a shard that goes to b
    node = next(f"n{i}" for i in range(1000) if mine_after.owns_node(f"n{i}"))  # a node a keeps
    index.stored_podgroup(f"ns/{name}", replace(group(name, "q"), phase="Running"))
    index.stored_pod("ns/p0", pod("p0", name, node=node, phase="Running"))
    alone = asyncio.run(peers.partition(("a",), view, index))
    index.regroup(alone.owns, alone.owns_node, alone.shards)
    assert ledger.calls == [("announce", ("a",))]  # (its first set: it owned nothing before)
    asyncio.run(peers.partition(joined, view, index))
    (what, written), announced = ledger.calls[1], ledger.calls[2]
    assert what == "records" and announced == ("announce", joined)
    shard = shard_of_key(f"ns/{name}")
    assert not theirs_after.owns_node(node)
    away = msgspec.json.decode(written[away_key(shard, node_group(node))], type=AwayNodes)
    assert set(away.nodes[node]) == {"ns/p0"}
    assert written[sums_key(shard, "q")] is not None


def test_a_departed_instances_nodes_wait_until_its_shards_records_are_written_by_another() -> None:
    """An instance that died wrote no hand-over: its shards' pods on its own nodes are in no `away`
    record. Its nodes are planned again only once no record of its shards is still its own (their new
    owners have read them and written them)."""
    ledger = AnnouncingLedger()
    peers = Several(ledger, pods=FixedPods())  # type: ignore[arg-type]
    view = View(instance="a", epoch=1)
    index = ClusterIndex()
    both = ("a", "b")
    theirs = Partition("b", both)
    shard = min(theirs.shards)
    node = next(f"n{i}" for i in range(1000) if theirs.owns_node(f"n{i}"))
    asyncio.run(peers.partition(both, view, index))
    ledger.announced["b"] = Announcement(both, time.time())
    assert not asyncio.run(peers.partition(both, view, index)).owns_node(node)
    assert index.others.apply(used_key(shard), msgspec.json.encode(ShardUse(1, {"cpu": 1.0}, 1, writer="b")))
    del ledger.announced["b"]  # (it died, and its announcement was removed)
    assert not asyncio.run(peers.partition(("a",), view, index)).owns_node(node)
    assert not asyncio.run(peers.partition(("a",), view, index)).owns_node(node)  # (still b's record)
    assert index.others.apply(used_key(shard), msgspec.json.encode(ShardUse(2, {"cpu": 1.0}, 1, writer="a")))
    assert asyncio.run(peers.partition(("a",), view, index)).owns_node(node)


def test_a_record_of_an_own_shard_another_wrote_is_written_over_at_the_next_publish() -> None:
    """A previous owner's record read after this instance took the shard (and counted it anew) is
    written over, here deleted: the shard counts nothing of it."""
    ledger = FlakyLedger()
    ledger.up = True
    peers = Several(ledger, pods=FixedPods())  # type: ignore[arg-type]
    index = ClusterIndex()
    assert index.others.apply(used_key(5), msgspec.json.encode(ShardUse(1, {"cpu": 1.0}, 1, writer="b")))
    assert index.others.stray("a", frozenset({5})) == [used_key(5)]
    asyncio.run(peers.publish(index, frozenset({5})))
    assert ledger.written == [(used_key(5), None)]

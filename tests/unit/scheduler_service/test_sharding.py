"""One instance's share of a snapshot: owned pending pods, every bound pod, reserved pods as bound."""

from __future__ import annotations

from fractions import Fraction

from service_builders import group, pod

from vc_core.ownership import rendezvous_owner
from vc_scheduler import ledger
from vc_scheduler.sharding import ledger_view, live_reservations, node_capacity, owner_filter, shard_snapshot
from vc_scheduling.snapshot.cluster import ClusterSnapshot, NodeObj, QueueObj

NOW = 1_000_000.0


def test_keeps_owned_pending_every_bound_and_reserved_as_bound() -> None:
    snap = ClusterSnapshot(
        pods=(pod("mine", "g1"), pod("theirs", "g2"), pod("bound", "g2", node="n1"), pod("reserved", "g2")),
        podgroups=(group("g1"), group("g2")),
    )
    out = shard_snapshot(snap, lambda key: key == "ns/g1", {"uid-reserved": "n2"})
    assert {p.name: p.node_name for p in out.pods} == {"mine": "", "bound": "n1", "reserved": "n2"}
    assert out.podgroups == snap.podgroups  # every PodGroup stays: queue shares see the whole cluster


def test_owner_filter_matches_rendezvous_and_partitions() -> None:
    members = ("a", "b", "c")
    keys = [f"ns/job-{i}" for i in range(300)]
    owners = {m: owner_filter(m, members) for m in members}
    for key in keys:
        assert [m for m in members if owners[m](key)] == [rendezvous_owner(key, members)]
    counts = [sum(owners[m](k) for k in keys) for m in members]
    assert min(counts) > 60  # roughly even


def test_view_indexes_occupying_pods_by_node_and_queue() -> None:
    snap = ClusterSnapshot(
        pods=(pod("a", "g1", node="n1", phase="Running"), pod("b", "g1", node="n1", phase="Succeeded"), pod("c", "g1")),
        podgroups=(group("g1", queue="q"),),
    )
    v = ledger_view(snap, gone=frozenset(), live=frozenset({"x"}), instance="x", epoch=1)
    assert set(v.occupying_node("n1")) == {"uid-a"}
    assert set(v.occupying_queue("q")) == {"uid-a"}
    assert v.pods["uid-a"].requests["pods"] == 1


def test_view_counts_a_pod_under_its_queues_ancestors() -> None:
    snap = ClusterSnapshot(
        pods=(pod("a", "g1", node="n1", phase="Running"), pod("b", "g2", node="n1", phase="Running")),
        podgroups=(group("g1", queue="dev"), group("g2", queue="ops")),
        queues=(QueueObj("eng"), QueueObj("dev", parent="eng"), QueueObj("ops")),
    )
    v = ledger_view(snap, gone=frozenset(), live=frozenset({"x"}), instance="x", epoch=1)
    assert set(v.occupying_queue("dev")) == {"uid-a"}
    assert set(v.occupying_queue("eng")) == {"uid-a"}
    assert set(v.occupying_queue("root")) == {"uid-a", "uid-b"}


def test_live_reservations_skip_pruned() -> None:
    snap = ClusterSnapshot(pods=(pod("a", "g"), pod("b", "g", phase="Succeeded")), podgroups=(group("g"),))
    v = ledger_view(snap, gone=frozenset(), live=frozenset({"x"}), instance="x", epoch=1)
    record = ledger.Record(
        {
            "uid-a": ledger.reservation("ns/a", {}, instance="x", epoch=1, at=NOW),
            "uid-b": ledger.reservation("ns/b", {}, instance="x", epoch=1, at=NOW),
        }
    )
    assert live_reservations([("node.n1", record), ("queue.q", record)], v, NOW) == {"uid-a": "n1"}


def test_node_capacity_includes_pod_slots() -> None:
    node = NodeObj(name="n", labels={}, taints=(), unschedulable=False, allocatable={"cpu": Fraction(8)}, max_pods=110)
    assert node_capacity(node) == {"cpu": Fraction(8), "pods": Fraction(110)}


def test_view_counts_an_assumed_node_as_unbound() -> None:
    """Other instances' reservations are judged by stored binds, not by what this instance assumed."""
    snap = ClusterSnapshot(pods=(pod("a", "g", node="n1"),), podgroups=(group("g"),))
    v = ledger_view(snap, gone=frozenset(), live=frozenset({"x"}), instance="x", epoch=1, assumed=frozenset({"ns/a"}))
    assert v.pods["uid-a"].node == ""
    assert v.occupying_node("n1") == {}

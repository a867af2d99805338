"""One instance's share of a snapshot: owned pending pods, every bound pod, reserved pods as bound."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.scheduler_service.service_builders import group, node, pod
from vc_core.ownership import rendezvous_owner
from vc_scheduler import ledger
from vc_scheduler.ledger_view import LedgerViews
from vc_scheduler.planning import plan_cycle
from vc_scheduler.sharding import (
    ReservedPlacements,
    ledger_view,
    live_reservations,
    node_capacity,
    owner_filter,
    shard,
    shard_snapshot,
)
from vc_scheduling.cycle import load_scheduler_conf
from vc_scheduling.framework.carried import CarriedState
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


def test_a_reserved_pod_is_the_same_copy_while_neither_it_nor_its_node_changes() -> None:
    reserved, other = pod("reserved", "g2"), pod("other", "g2")
    snap = ClusterSnapshot(pods=(reserved, other), podgroups=(group("g2"),))
    placements = ReservedPlacements()

    def placed(snapshot: ClusterSnapshot, reservations: dict[str, str]) -> dict[str, Any]:
        return {p.name: p for p in shard(snapshot, lambda _key: False, reservations, placements)[0].pods}

    first = placed(snap, {"uid-reserved": "n1", "uid-other": "n1"})
    again = placed(snap, {"uid-reserved": "n1", "uid-other": "n1"})
    assert again["reserved"] is first["reserved"] and again["other"] is first["other"]
    assert placed(snap, {"uid-reserved": "n2", "uid-other": "n1"})["reserved"].node_name == "n2"  # node moved
    changed = replace(reserved, labels={"a": "b"})
    fresh = placed(replace(snap, pods=(changed, other)), {"uid-reserved": "n2"})["reserved"]
    assert fresh.labels == {"a": "b"} and fresh.node_name == "n2"  # the pod changed: a new copy of it
    # "other" was not reserved in the last call: its copy is forgotten, a later reservation copies anew.
    assert placed(snap, {"uid-other": "n1"})["other"] is not first["other"]


def test_a_cycle_over_unchanged_reservations_rebuilds_no_job_and_no_node() -> None:
    """Another instance's reserved pods must not count as changed in every cycle while their binds are in
    flight (each cycle re-derived them and rebuilt their jobs and node rows)."""
    snap = ClusterSnapshot(
        nodes=(node("n1"), node("n2")),
        pods=(pod("mine", "g1"), pod("theirs", "g2")),
        podgroups=(group("g1"), group("g2")),
        queues=(QueueObj("default"),),
    )
    members = ("a", "b")
    mine = rendezvous_owner("ns/g1", members)
    theirs = next(m for m in members if m != mine)
    record = ledger.Record({"uid-theirs": ledger.reservation("ns/theirs", {}, instance=theirs, epoch=1, at=NOW)})
    memo, placements = CarriedState(), ReservedPlacements()

    def cycle() -> None:
        plan_cycle(
            snap,
            load_scheduler_conf(),
            instance=mine,
            epoch=1,
            members=members,
            gone=frozenset(),
            assumed=frozenset(),
            ledger_records=[("node.n2", record)],
            session_uid="s",
            sharded=True,
            now=datetime.fromtimestamp(NOW, UTC),
            wall_s=NOW,
            timer=lambda: 0.0,
            memo=memo,
            placements=placements,
        )

    cycle()
    cycle()
    assert memo.rebuilt == (0, 0)


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


# -- the view carried between cycles -------------------------------------------------------------------


def _scratch_view(snap: ClusterSnapshot, assumed: frozenset[str]) -> ledger.View:
    """View.of over every pod, as the ledger view was built before it was carried."""
    queue_of = {pg.key: pg.queue for pg in snap.podgroups}
    states = {
        p.uid: ledger.PodState(
            node="" if p.key in assumed else p.node_name,
            terminal=p.phase in ("Succeeded", "Failed"),
            requests={**p.requests, "pods": Fraction(1)},
            queue=queue_of.get(f"{p.namespace}/{p.group_name}", "") if p.group_name else "",
        )
        for p in snap.pods
    }
    parents = {q.name: q.parent or "root" for q in snap.queues if q.name != "root"}
    return ledger.View.of(states, parents=parents, live=frozenset({"x"}), instance="x", epoch=1)


OPS = ("bind", "finish", "delete", "add", "recreate", "assume", "move", "parent", "none")


def _step(snap: ClusterSnapshot, assumed: frozenset[str], op: str, i: int) -> tuple[ClusterSnapshot, frozenset[str]]:
    pods, pgs, queues = list(snap.pods), list(snap.podgroups), list(snap.queues)
    if op == "bind" and pods:
        pods[i % len(pods)] = replace(pods[i % len(pods)], node_name=f"n{i % 3}", phase="Running")
    elif op == "finish" and pods:
        pods[i % len(pods)] = replace(pods[i % len(pods)], phase="Succeeded")
    elif op == "delete" and pods:
        del pods[i % len(pods)]
    elif op == "add":
        taken = {p.name for p in pods}
        pods.append(pod(next(f"p{i}-{k}" for k in range(len(pods) + 1) if f"p{i}-{k}" not in taken), f"g{i % 3}"))
    elif op == "recreate" and pods:  # the same name, a new uid
        old = pods[i % len(pods)]
        pods[i % len(pods)] = replace(old, uid=f"{old.uid}-again", node_name="")
    elif op == "assume" and pods:
        assumed = assumed ^ {pods[i % len(pods)].key}
    elif op == "move" and pgs:
        pgs[i % len(pgs)] = replace(pgs[i % len(pgs)], queue=("dev", "ops", "eng")[i % 3])
    elif op == "parent":
        queues = [QueueObj("eng"), QueueObj("dev", parent="eng" if i % 2 else ""), QueueObj("ops")]
    return replace(snap, pods=tuple(pods), podgroups=tuple(pgs), queues=tuple(queues)), assumed


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 30)), max_size=5), min_size=1, max_size=8))
def test_a_carried_view_is_the_view_built_anew_and_a_published_view_never_changes(steps: list[Any]) -> None:
    snap = ClusterSnapshot(
        pods=tuple(pod(f"p{i}", f"g{i % 3}", node=f"n{i % 2}" if i % 2 else "") for i in range(6)),
        podgroups=(group("g0", queue="dev"), group("g1", queue="ops"), group("g2", queue="dev")),
        queues=(QueueObj("eng"), QueueObj("dev", parent="eng"), QueueObj("ops")),
    )
    views, assumed = LedgerViews(), frozenset[str]()
    published: list[tuple[ledger.View, Any]] = []
    for batch in steps:
        for op, i in batch:
            snap, assumed = _step(snap, assumed, op, i)
        got = views.view(snap, gone=frozenset(), live=frozenset({"x"}), instance="x", epoch=1, assumed=assumed)
        want = _scratch_view(snap, assumed)
        assert dict(got.pods) == dict(want.pods)
        assert {n: dict(p) for n, p in got.by_node.items()} == {n: dict(p) for n, p in want.by_node.items()}
        assert {q: dict(p) for q, p in got.by_queue.items()} == {q: dict(p) for q, p in want.by_queue.items()}
        published.append((got, _frozen(got)))
    for view, frozen in published:  # later cycles built their views without touching earlier ones
        assert _frozen(view) == frozen


def _frozen(view: ledger.View) -> Any:
    return (
        dict(view.pods),
        {n: dict(p) for n, p in view.by_node.items()},
        {q: dict(p) for q, p in view.by_queue.items()},
    )

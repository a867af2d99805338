"""One instance's share of the cluster: the index the cache keeps per change (the ledger's view, the queue
sums and node usage over what other instances own), the share and borrowing snapshots, and the sessions
planned on them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.scheduler_service.service_builders import group, node, pod, publish_others
from vc_core.ownership import balanced_owners, rendezvous_owner
from vc_core.resources import Resources, add
from vc_proto.core import Pod
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import DEFAULT_GROUP_PREFIX, SHARDS, shard_of
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION
from vc_sched_core.cycle import load_scheduler_conf, run_cycle
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.snapshot.cluster import ClusterSnapshot, NodeObj, PodGroupObj, PodObj, QueueObj
from vc_scheduler import ledger, metrics
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.gangs import node_capacity
from vc_scheduler.lending import Lent, LoanAsk, LoanBook, loan_pods
from vc_scheduler.planning import Cycle, plan_borrowing, plan_cycle
from vc_scheduler.shard_records import OtherShards, ShardTally
from vc_scheduler.share import Partition, Share, left_over, owner_of

NOW = 1_000_000.0
WHEN = datetime.fromtimestamp(NOW, UTC)
MEMBERS = ("a", "b")


def feed(
    index: ClusterIndex,
    before: ClusterSnapshot | None,
    after: ClusterSnapshot,
    assumed: frozenset[str],
    *,
    changed_only: bool = False,
) -> None:
    """Hand `index` the changes from `before` to `after` as the cache does: stored objects (an assumed pod
    is stored unbound), and where each pod is as the cycle sees it (assumed binds included). With
    `changed_only`, only the pods and PodGroups `after` replaces are stored again, as the cache's watches
    hand them over."""
    old_pods = {p.key: p for p in before.pods} if before else {}
    new_pods = {p.key: p for p in after.pods}
    for key in old_pods.keys() - new_pods.keys():
        index.stored_pod(key, None)
        index.place(key, old_pods[key], None)
    old_groups = {g.key: g for g in before.podgroups} if before else {}
    new_groups = {g.key: g for g in after.podgroups}
    for key in old_groups.keys() - new_groups.keys():
        index.stored_podgroup(key, None)
    for key, pg in new_groups.items():
        if not (changed_only and old_groups.get(key) is pg):
            index.stored_podgroup(key, pg)
    index.queues(after.queues)
    for key, p in new_pods.items():
        if changed_only and old_pods.get(key) is p:
            continue
        index.stored_pod(key, msgspec.structs.replace(p, node_name="") if key in assumed else p)
        if old_pods.get(key) is not p:  # (as the cache: only an object it replaces)
            index.place(key, old_pods.get(key), p)
    old_nodes = {n.name: n for n in before.nodes} if before else {}
    for name in old_nodes.keys() - {n.name for n in after.nodes}:
        index.stored_node(name, None)
    for n in after.nodes:
        index.stored_node(n.name, n)


def scratch_view(snap: ClusterSnapshot, assumed: frozenset[str]) -> ledger.View:
    """View.of over every pod: an assumed node counts as none."""
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


def scratch_outside(snap: ClusterSnapshot, partition: Partition) -> dict[str, tuple[dict[str, float], ...]]:
    """Per queue, the request, allocated and reserved sums over the PodGroups the partition does not own."""
    out: dict[str, tuple[dict[str, float], ...]] = {}
    for pg in snap.podgroups:
        if partition.owns(pg.key):
            continue
        request: dict[str, float] = {}
        allocated: dict[str, float] = {}
        placed = 0
        for p in snap.pods:
            if p.group_name != pg.name or p.deleting:
                continue
            running = bool(p.node_name) and p.phase in ("Pending", "Running")
            if running or (p.phase == "Pending" and not p.node_name):
                for name, v in p.requests.items():
                    request[name] = request.get(name, 0.0) + float(v)
            if running:
                placed += 1
                for name, v in p.requests.items():
                    allocated[name] = allocated.get(name, 0.0) + float(v)
        reserved: dict[str, float] = {}
        if pg.min_resources and (pg.phase == "Inqueue" or (pg.phase == "Running" and placed >= pg.min_member)):
            for name, v in pg.min_resources.items():
                left = float(v) - allocated.get(name, 0.0)
                if left > 0:
                    reserved[name] = left
        sums = out.setdefault(pg.queue, ({}, {}, {}))
        for into, part in zip(sums, (request, allocated, reserved), strict=True):
            for name, v in part.items():
                into[name] = into.get(name, 0.0) + v
    return out


def _close(a: dict[str, float], b: dict[str, float]) -> bool:
    names = set(a) | set(b)
    return all(abs(a.get(n, 0.0) - b.get(n, 0.0)) < 1e-9 for n in names)


OPS = ("bind", "finish", "leave", "resize", "delete", "add", "recreate", "assume", "move", "parent", "admit", "none")


def scratch_usage(snap: ClusterSnapshot) -> dict[str, tuple[dict[str, float], int]]:
    """Per node, what its stored occupying pods ask (without `pods`) and how many they are."""
    out: dict[str, tuple[dict[str, float], int]] = {}
    for p in snap.pods:
        if p.node_name and p.phase in ("Pending", "Running"):
            used, count = out.get(p.node_name, ({}, 0))
            for name, v in p.requests.items():
                used[name] = used.get(name, 0.0) + float(v)
            out[p.node_name] = (used, count + 1)
    return out


def _step(snap: ClusterSnapshot, assumed: frozenset[str], op: str, i: int) -> tuple[ClusterSnapshot, frozenset[str]]:
    pods, pgs, queues = list(snap.pods), list(snap.podgroups), list(snap.queues)
    if op == "bind" and pods:
        pods[i % len(pods)] = msgspec.structs.replace(pods[i % len(pods)], node_name=f"n{i % 3}", phase="Running")
    elif op == "finish" and pods:
        pods[i % len(pods)] = msgspec.structs.replace(pods[i % len(pods)], phase="Succeeded")
    elif op == "leave" and pods:
        pods[i % len(pods)] = msgspec.structs.replace(pods[i % len(pods)], deleting=True)
    elif op == "resize" and pods:
        pods[i % len(pods)] = msgspec.structs.replace(pods[i % len(pods)], requests={"cpu": Fraction(1 + i % 3)})
    elif op == "delete" and pods:
        del pods[i % len(pods)]
    elif op == "add":
        taken = {p.name for p in pods}
        pods.append(pod(next(f"p{i}-{k}" for k in range(len(pods) + 1) if f"p{i}-{k}" not in taken), f"g{i % 3}"))
    elif op == "recreate" and pods:  # the same name, a new uid
        old = pods[i % len(pods)]
        pods[i % len(pods)] = msgspec.structs.replace(old, uid=f"{old.uid}-again", node_name="")
    elif op == "assume" and pods:
        assumed = assumed ^ {pods[i % len(pods)].key}
    elif op == "move" and pgs:
        pgs[i % len(pgs)] = replace(pgs[i % len(pgs)], queue=("dev", "ops", "eng")[i % 3])
    elif op == "parent":
        queues = [QueueObj("eng"), QueueObj("dev", parent="eng" if i % 2 else ""), QueueObj("ops")]
    elif op == "admit" and pgs:
        pg = pgs[i % len(pgs)]
        pgs[i % len(pgs)] = replace(
            pg, phase=("Inqueue", "Running", "Pending")[i % 3], min_resources={"cpu": Fraction(i % 4)}, min_member=2
        )
    return replace(snap, pods=tuple(pods), podgroups=tuple(pgs), queues=tuple(queues)), assumed


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 30)), max_size=5), min_size=1, max_size=8))
def test_the_index_kept_per_change_is_the_view_and_the_sums_built_anew(steps: list[Any]) -> None:
    snap = ClusterSnapshot(
        nodes=(node("n0"), node("n1"), node("n2")),
        pods=tuple(pod(f"p{i}", f"g{i % 3}", node=f"n{i % 2}" if i % 2 else "") for i in range(6)),
        podgroups=(group("g0", queue="dev"), group("g1", queue="ops"), group("g2", queue="dev")),
        queues=(QueueObj("eng"), QueueObj("dev", parent="eng"), QueueObj("ops")),
    )
    partition = Partition("a", MEMBERS)
    index, assumed = ClusterIndex(), frozenset[str]()
    index.regroup(partition.owns, partition.owns_node, partition.shards)
    feed(index, None, snap, assumed)
    published = OtherShards()  # what the instance wrote of its own shards, change by change
    for batch in steps:
        before = snap
        for op, i in batch:
            snap, assumed = _step(snap, assumed, op, i)
        feed(index, before, snap, assumed)
        got = index.view(gone=frozenset(), live=frozenset({"x"}), instance="x", epoch=1)
        want = scratch_view(snap, assumed)
        assert dict(got.pods) == dict(want.pods)
        assert {n: dict(p) for n, p in got.by_node.items() if p} == {n: dict(p) for n, p in want.by_node.items()}
        # By queue, the pods of the own PodGroups by uid; the others' come from their owners' records.
        own_uids = {p.uid for p in snap.pods if p.group_name and partition.owns(f"ns/{p.group_name}")}
        want_own = {q: {u: r for u, r in p.items() if u in own_uids} for q, p in want.by_queue.items()}
        assert {q: dict(p) for q, p in got.by_queue.items() if p} == {q: p for q, p in want_own.items() if p}
        stored = replace(
            snap, pods=tuple(msgspec.structs.replace(p, node_name="") if p.key in assumed else p for p in snap.pods)
        )
        publish_others(index, partition)
        for queue, pods in want.by_queue.items():  # (the whole cluster's count of what occupies the queue)
            got_queue = add(*got.occupying_queue(queue).values())
            assert _close(
                {n: float(v) for n, v in got_queue.items()}, {n: float(v) for n, v in add(*pods.values()).items()}
            ), queue
        outside = index.outside()
        expected = scratch_outside(stored, partition)
        for queue in set(expected) | set(outside.queues):
            sums = outside.queues.get(queue)
            got_sums = (sums.request, sums.allocated, sums.reserved) if sums else ({}, {}, {})
            want_sums = expected.get(queue, ({}, {}, {}))
            assert all(_close(dict(g), w) for g, w in zip(got_sums, want_sums, strict=True)), queue
        # What it publishes of its own shards, kept per change, is what its PodGroups add up to.
        for key, value in index.tally.flush(1, partition.shards):
            assert published.apply(key, value)
        fresh, counted = ShardTally(), OtherShards()
        index.count_shards(fresh, partition.shards, partition.owns_node)
        for key, value in fresh.flush(1, partition.shards):
            assert counted.apply(key, value)
        assert set(published.queues) == set(counted.queues)
        for queue, totals in counted.queues.items():
            mine = published.queues[queue]
            assert (mine.asked, mine.placed) == (totals.asked, totals.placed), queue
            for got_sums, want_sums in zip(
                (mine.request, mine.allocated, mine.reserved),
                (totals.request, totals.allocated, totals.reserved),
                strict=True,
            ):
                assert _close(got_sums, want_sums), queue
        # Each node's usage by stored pods, and the total over the nodes other instances own.
        usage = scratch_usage(stored)
        for name in {n.name for n in snap.nodes} | set(usage):
            got_used, got_count = index.usage(name)
            want_used, want_count = usage.get(name, ({}, 0))
            assert got_count == want_count and _close(got_used, want_used), name
        foreign: dict[str, float] = {}
        for name, (used, _) in usage.items():
            if not partition.owns_node(name):
                for resource, v in used.items():
                    foreign[resource] = foreign.get(resource, 0.0) + v
        assert _close(dict(outside.used), foreign)
        # Where each pod is, as the cycle sees it (assumed binds included), and each PodGroup's pods.
        assert {n: set(keys) for n, keys in index.pods_on.items()} == _by(snap.pods, lambda p: p.node_name)
        assert {g: set(keys) for g, keys in index.pods_of.items()} == _by(
            snap.pods, lambda p: f"ns/{p.group_name}" if p.group_name else ""
        )
        # The state gauges' counts from the own PodGroups' figures and the other shards' records are the
        # walk over every stored pod's (the assumed binds standing for the cycle's); the pods waiting, the
        # own PodGroups' (a cycle binds the pods of its own PodGroups only).
        own = {p.key for p in snap.pods if p.group_name and partition.owns(f"ns/{p.group_name}")}
        binds = {key: "n0" for key in assumed & own}
        got_tally = metrics.index_tally(index, [q.name for q in snap.queues], binds)
        want_tally = metrics.tally(stored, binds)
        assert got_tally.statuses == want_tally.statuses
        assert got_tally.waiting == {k: n for k, n in want_tally.waiting.items() if partition.owns(k)}
        for got_amounts, want_amounts in (
            (got_tally.allocated, want_tally.allocated),
            (got_tally.request, want_tally.request),
            (got_tally.namespaces, want_tally.namespaces),
        ):
            assert got_amounts.keys() == want_amounts.keys()
            assert all(_close(got_amounts[k], want_amounts[k]) for k in want_amounts)


def _by(pods: tuple[PodObj, ...], key: Any) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for p in pods:
        if key(p):
            out.setdefault(key(p), set()).add(p.key)
    return out


def test_every_node_and_podgroup_has_one_owner_roughly_evenly() -> None:
    members = ("a", "b", "c")
    parts = {m: Partition(m, members) for m in members}
    for i in range(300):
        assert [m for m in members if parts[m].owns_node(f"n{i}")] == [rendezvous_owner(f"node:n{i}", members)]
        assert [m for m in members if parts[m].owns(f"ns/g{i}")] == [owner_of(f"ns/g{i}", members)]
    for counts in (
        [sum(parts[m].owns_node(f"n{i}") for i in range(300)) for m in members],
        [sum(parts[m].owns(f"ns/g{i}") for i in range(300)) for m in members],
    ):
        assert min(counts) > 60


def test_a_podgroup_goes_with_the_shard_its_pods_are_stored_under() -> None:
    """The instance that owns a PodGroup is the one that owns its pods' shard, for a PodGroup named in
    the annotation and for one the podgroup controller names after the pod's owner."""
    members = ("a", "b", "c", "d")
    owners = balanced_owners(SHARDS, members)
    named = Pod(
        api_version="v1",
        metadata=ObjectMeta(name="p", namespace="ns", annotations={GROUP_NAME_ANNOTATION: "job-1"}),
    )
    bare = Pod(api_version="v1", metadata=ObjectMeta(name="q", namespace="team", uid="u-1"))
    for stored, key in ((named, "ns/job-1"), (bare, f"team/{DEFAULT_GROUP_PREFIX}u-1")):
        assert owner_of(key, members) == owners[shard_of(stored)]
    # Other keys the instances share stay with rendezvous hashing.
    for key in ("queue:default", "node:n1", "metrics:cluster", "ledger:queue:q"):
        assert owner_of(key, members) == rendezvous_owner(key, members)
    assert owner_of("ns/g", ()) is None


# -- the share and borrowing snapshots ----------------------------------------------------------------


def cluster(nodes: int, pods: list[PodObj], groups: list[PodGroupObj]) -> ClusterSnapshot:
    ordered = tuple(msgspec.structs.replace(p, order=i) for i, p in enumerate(pods))
    return ClusterSnapshot(
        nodes=tuple(node(f"n{i}") for i in range(nodes)),
        pods=ordered,
        podgroups=tuple(groups),
        queues=(QueueObj("default"),),
    )


def settled(me: str, members: tuple[str, ...] = MEMBERS) -> Partition:
    """`me`'s partition once every member announced `members` and read the others' announcements."""
    return Partition(me, members, {m: members for m in members if m != me})


def share_of(snap: ClusterSnapshot, partition: Partition, assumed: frozenset[str] = frozenset()) -> Share:
    index = ClusterIndex()
    index.regroup(partition.owns, partition.owns_node, partition.shards)
    feed(index, None, snap, assumed)
    publish_others(index, partition)
    return Share(lambda: snap, {p.key: p for p in snap.pods}.get, index)


def answers_for(snap: ClusterSnapshot, partition: Partition) -> dict[str, dict[str, Resources]]:
    """What each other instance answers a borrower for the nodes it owns (loans.LoanDesk.free): their
    capacity less every pod stored there (no binds in flight, no loans)."""
    index = ClusterIndex()
    index.regroup(partition.owns, partition.owns_node, partition.shards)
    feed(index, None, snap, frozenset())
    view = index.view(gone=frozenset(), live=frozenset(MEMBERS), instance=partition.instance, epoch=1)
    out: dict[str, dict[str, Resources]] = {}
    for each in snap.nodes:
        lender = partition.owner_of_node(each.name)
        if lender is not None and not partition.owns_node(each.name):
            left = LoanBook().left(each.name, node_capacity(each), index.by_node.get(each.name, {}), view, 0.0)
            out.setdefault(lender, {})[each.name] = left
    return out


def own_group(partition: Partition, mine: bool = True, *, start: int = 0) -> str:
    return next(f"g{i}" for i in range(start, 1000) if partition.owns(f"ns/g{i}") == mine)


def test_the_share_holds_own_nodes_with_their_pods_and_own_podgroups_with_theirs() -> None:
    a = Partition("a", MEMBERS)
    mine, theirs = own_group(a), own_group(a, False)
    own_node = next(f"n{i}" for i in range(20) if a.owns_node(f"n{i}"))
    other_node = next(f"n{i}" for i in range(20) if not a.owns_node(f"n{i}"))
    pods = [
        pod("mine-waiting", mine),
        pod("mine-elsewhere", mine, node=other_node, phase="Running"),
        pod("theirs-here", theirs, node=own_node, phase="Running"),
        pod("theirs-elsewhere", theirs, node=other_node, phase="Running"),
        pod("theirs-waiting", theirs),
        pod("theirs-reserved-here", theirs),
    ]
    snap = cluster(20, pods, [group(mine), group(theirs)])
    reserved = {"uid-theirs-reserved-here": Lent("ns/theirs-reserved-here", own_node, {"cpu": Fraction(1)})}
    out, by_reservation = share_of(snap, a).snapshot(a, reserved)
    assert {n.name for n in out.nodes} == {f"n{i}" for i in range(20) if a.owns_node(f"n{i}")}
    assert {p.name: p.node_name for p in out.pods} == {
        "mine-waiting": "",
        "mine-elsewhere": other_node,  # its job counts it; its node is not in the share
        "theirs-here": own_node,
        "theirs-reserved-here": own_node,
    }
    assert [p.order for p in out.pods] == sorted(p.order for p in out.pods)  # the cache's order, as carried
    assert [pg.key for pg in out.podgroups] == [f"ns/{mine}"]
    assert by_reservation == 1
    assert out.outside is not None
    assert out.outside.allocatable == {"cpu": 4.0 * sum(1 for i in range(20) if not a.owns_node(f"n{i}"))}
    assert out.outside.used == {"cpu": 2.0}  # mine-elsewhere and theirs-elsewhere
    assert out.outside.queues["default"].allocated == {"cpu": 2.0}  # theirs-here and theirs-elsewhere


def test_alone_the_share_is_the_whole_cluster() -> None:
    a = Partition("a", ("a",))
    snap = cluster(3, [pod("p", "g0")], [group("g0")])
    out, by_reservation = share_of(snap, a).snapshot(a, {})
    assert out is snap and by_reservation == 0


def test_a_reserved_pod_is_the_same_copy_while_neither_it_nor_its_node_changes() -> None:
    a = Partition("a", MEMBERS)
    theirs = own_group(a, False)
    here = [f"n{i}" for i in range(20) if a.owns_node(f"n{i}")]
    snap = cluster(20, [pod("r", theirs)], [group(theirs)])
    share = share_of(snap, a)
    cpu = {"cpu": Fraction(1)}
    first, _ = share.snapshot(a, {"uid-r": Lent("ns/r", here[0], cpu)})
    again, _ = share.snapshot(a, {"uid-r": Lent("ns/r", here[0], cpu)})
    assert again.pods[0] is first.pods[0]
    moved, _ = share.snapshot(a, {"uid-r": Lent("ns/r", here[1], cpu)})
    assert moved.pods[0].node_name == here[1]


def test_a_loan_of_a_pod_the_cache_does_not_hold_occupies_its_node_in_the_share() -> None:
    """Sent only its shards' pods, the owner holds no copy of a borrower's pod: the loan itself stands in
    for it on the node (what it reserved, `pods` counted by the pod itself), the same copy each cycle."""
    a = Partition("a", MEMBERS)
    here = next(f"n{i}" for i in range(20) if a.owns_node(f"n{i}"))
    share = share_of(cluster(20, [], []), a)
    loan = {"uid-x": Lent("ns/x", here, {"cpu": Fraction(3), "pods": Fraction(1)})}
    first, by_reservation = share.snapshot(a, loan)
    assert by_reservation == 1
    assert [(p.uid, p.node_name, p.requests) for p in first.pods] == [("uid-x", here, {"cpu": Fraction(3)})]
    again, _ = share.snapshot(a, loan)
    assert again.pods[0] is first.pods[0]


def test_a_cycle_over_unchanged_loans_rebuilds_no_job_and_no_node() -> None:
    """Another instance's pods this one lent room to must not count as changed in every cycle while their
    binds are in flight (each cycle would re-derive them and rebuild their node rows)."""
    a = Partition("a", MEMBERS)
    mine, theirs = own_group(a), own_group(a, False)
    here = next(f"n{i}" for i in range(20) if a.owns_node(f"n{i}"))
    snap = cluster(20, [pod("mine", mine), pod("theirs", theirs)], [group(mine), group(theirs)])
    share, memo = share_of(snap, a), CarriedState()
    book = LoanBook()
    view = share._index.view(gone=frozenset(), live=frozenset(MEMBERS), instance="a", epoch=1)
    ask = LoanAsk("b", 1, loan_pods([("uid-theirs", "ns/theirs", here)], {"uid-theirs": {"cpu": Fraction(1)}}))
    assert book.grant(ask, {here: {"cpu": Fraction(4), "pods": Fraction(10)}}, view.occupying_node, view, NOW).granted
    for _ in range(2):
        view = share._index.view(gone=frozenset(), live=frozenset(MEMBERS), instance="a", epoch=1)
        reserved = book.lent(view, NOW)
        assert reserved.keys() == {"uid-theirs"} and reserved["uid-theirs"][:2] == ("ns/theirs", here)
        out, _ = share.snapshot(a, reserved)
        plan_cycle(Cycle(out, a, "s", WHEN), load_scheduler_conf(), memo, lambda: 0.0)
    assert memo.rebuilt == (0, 0)


def test_node_capacity_includes_pod_slots() -> None:
    cap = node_capacity(NodeObj("n", {}, (), False, {"cpu": Fraction(4)}, max_pods=7))
    assert cap == {"cpu": Fraction(4), "pods": Fraction(7)}


# -- sessions on a share ----------------------------------------------------------------------------------


def test_a_session_on_each_share_reports_every_queue_as_the_whole_cluster_does() -> None:
    """Two instances' sessions, each on its share with what lies outside it, report each queue's
    allocation as one session over the whole cluster does (the queue's owner writes it), and see the
    queues' shares as it does."""
    pods, groups = [], []
    for i in range(12):
        groups.append(replace(group(f"g{i}", queue=("dev", "ops")[i % 2]), phase="Running"))
        pods.append(pod(f"p{i}", f"g{i}", node=f"n{i % 6}", phase="Running"))
    snap = replace(cluster(6, pods, groups), queues=(QueueObj("dev", weight=2), QueueObj("ops")))
    whole = run_cycle(snap, now=WHEN)
    for me in MEMBERS:
        part = Partition(me, MEMBERS)
        out, _ = share_of(snap, part).snapshot(part, {})
        assert len(out.podgroups) < len(snap.podgroups)
        planned = plan_cycle(Cycle(out, part, "s", WHEN), load_scheduler_conf(), CarriedState(), lambda: 0.0)
        assert planned.result.queues == whole.queues


@pytest.mark.parametrize("me", MEMBERS)
def test_a_gang_larger_than_the_instances_nodes_is_placed_across_instances(me: str) -> None:
    part = settled(me)
    mine = own_group(part)
    nodes = 8
    own = sum(1 for i in range(nodes) if part.owns_node(f"n{i}"))
    size = 4 * own + 2  # more cpu than this instance's nodes have (4 each)
    gang = replace(group(mine, min_member=size))
    snap = cluster(nodes, [pod(f"w{i}", mine) for i in range(size)], [gang])
    share = share_of(snap, part)
    out, _ = share.snapshot(part, {})
    cycle = Cycle(out, part, "s", WHEN)
    first = plan_cycle(cycle, load_scheduler_conf(), CarriedState(), lambda: 0.0)
    assert first.result.binds == {}  # the gang does not fit on its own nodes: all or nothing
    waiting = left_over(out, first.result.binds)
    assert waiting == {f"ns/{mine}"}
    plan = plan_borrowing(
        first, share.borrowing(out, part, answers_for(snap, part)), waiting, load_scheduler_conf(), cycle
    )
    binds = plan.result.binds
    assert len(binds) == size
    assert any(not part.owns_node(n) for n in binds.values())
    per_node: dict[str, int] = {}
    for n in binds.values():
        per_node[n] = per_node.get(n, 0) + 1
    assert max(per_node.values()) <= 4  # no node overcommitted
    # Its status is what one session over the whole cluster reports for it.
    assert plan.result.podgroups[f"ns/{mine}"].phase == run_cycle(snap, now=WHEN).podgroups[f"ns/{mine}"].phase


def test_a_gang_still_short_of_pods_borrows_nothing() -> None:
    """Its controller is still creating its pods: no node of any instance can take it yet, so the cycle
    runs no borrowing session for it; once its pods are all there, it waits for room like any other."""
    part = settled("a")
    mine = own_group(part)
    gang = group(mine, min_member=3)
    short = cluster(8, [pod("w0", mine), pod("w1", mine), pod("gone", mine, phase="Failed")], [gang])
    out, _ = share_of(short, part).snapshot(part, {})
    first = plan_cycle(Cycle(out, part, "s", WHEN), load_scheduler_conf(), CarriedState(), lambda: 0.0)
    assert first.result.binds == {}
    assert left_over(out, first.result.binds) == frozenset()
    # A placed pod and one that finished count toward the gang as well.
    whole = cluster(8, [pod("w0", mine), pod("w1", mine, node="n0"), pod("w2", mine, phase="Succeeded")], [gang])
    out, _ = share_of(whole, part).snapshot(part, {})
    assert left_over(out, {}) == {f"ns/{mine}"}
    assert left_over(out, {"ns/w0": "n1"}) == frozenset()


def test_a_pod_whose_selector_matches_only_another_instances_nodes_is_placed() -> None:
    part = settled("a")
    mine = own_group(part)
    theirs = next(f"n{i}" for i in range(20) if not part.owns_node(f"n{i}"))
    snap = cluster(20, [msgspec.structs.replace(pod("picky", mine), node_selector={"zone": "far"})], [group(mine)])
    snap = replace(snap, nodes=tuple(replace(n, labels={"zone": "far"}) if n.name == theirs else n for n in snap.nodes))
    share = share_of(snap, part)
    out, _ = share.snapshot(part, {})
    cycle = Cycle(out, part, "s", WHEN)
    first = plan_cycle(cycle, load_scheduler_conf(), CarriedState(), lambda: 0.0)
    assert first.result.binds == {}
    plan = plan_borrowing(
        first, share.borrowing(out, part, answers_for(snap, part)), left_over(out, {}), load_scheduler_conf(), cycle
    )
    assert plan.result.binds == {"ns/picky": theirs}


def test_borrowed_nodes_offer_only_what_they_have_left() -> None:
    part = settled("a")
    mine, theirs = own_group(part), own_group(part, False)
    far = [f"n{i}" for i in range(4) if not part.owns_node(f"n{i}")]
    # Every other instance's node is full but for 1 cpu (3 pods of theirs on each, 4 cpu each).
    busy = [pod(f"b{n}-{k}", theirs, node=n, phase="Running") for n in far for k in range(3)]
    snap = cluster(
        4,
        [*busy, *(msgspec.structs.replace(pod(f"w{i}", mine), node_selector={}) for i in range(2))],
        [group(mine), group(theirs)],
    )
    snap = replace(snap, nodes=tuple(n for n in snap.nodes if n.name in far))  # only their nodes exist
    share = share_of(snap, part)
    out, _ = share.snapshot(part, {})
    borrowing = share.borrowing(out, part, answers_for(snap, part))
    assert {n.name: n.allocatable["cpu"] for n in borrowing.nodes} == {n: Fraction(1) for n in far}
    assert {n.name: n.max_pods for n in borrowing.nodes} == {n: 7 for n in far}
    # What the shrinking took off (3 cpu and 3 pod slots of each) stays outside, as allocatable and used:
    # the cluster's total stays the whole cluster's.
    assert borrowing.outside is not None
    assert borrowing.outside.allocatable == borrowing.outside.used == {"cpu": 3.0 * len(far)}


def test_borrowing_offers_no_node_that_no_other_instance_claims() -> None:
    """b's announcement is gone (removed while b seemed gone): nobody would lend b's nodes, so a's
    borrowing session does not plan on them (its loans would be refused, cycle after cycle)."""
    snap = cluster(8, [], [])
    far = {f"n{i}" for i in range(8) if not settled("a").owns_node(f"n{i}")}
    share = share_of(snap, settled("a"))
    out, _ = share.snapshot(settled("a"), {})
    assert {n.name for n in share.borrowing(out, settled("a"), answers_for(snap, settled("a"))).nodes} - {
        n.name for n in out.nodes
    } == far
    unclaimed = Partition("a", MEMBERS)  # no claim of b's read
    out, _ = share.snapshot(unclaimed, {})
    assert {n.name for n in share.borrowing(out, unclaimed, answers_for(snap, unclaimed)).nodes} == {
        n.name for n in out.nodes
    }


# -- nodes change owner only between the old owner's cycles ---------------------------------------------

UNIVERSE = ("a", "b", "c", "d")
NODES = tuple(f"n{i}" for i in range(24))
EVENTS = st.lists(
    st.tuples(st.sampled_from(("join", "leave", "see", "announce", "read", "retract")), st.integers(0, 7)),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(EVENTS)
def test_no_node_is_planned_by_two_instances_whatever_order_joins_and_leaves_reach_them(
    events: list[tuple[str, int]],
) -> None:
    """Instances join and leave; each learns of it late ('see'), announces the member set it plans under
    on one ordered log, and reads the log late. At every moment each node may be planned by one instance
    at most: one that announced, and owns the node under its set with no other announcement it has
    read claiming it (a departed instance's announcement is removed only once it is gone)."""
    live: set[str] = {"a"}
    view: dict[str, tuple[str, ...]] = {"a": ("a",)}
    log: list[tuple[str, tuple[str, ...] | None]] = []  # (instance, announced set, or None: removed)
    read: dict[str, int] = {"a": 0}
    mine: dict[str, tuple[str, ...]] = {}

    def planners(node_name: str) -> list[str]:
        out = []
        for m in live:
            if m not in mine:
                continue  # announced nothing: plans nothing
            claims: dict[str, tuple[str, ...]] = {}
            for who, members in log[: read[m]]:
                if who == m:
                    continue
                if members is None:
                    claims.pop(who, None)
                else:
                    claims[who] = members
            if Partition(m, mine[m], claims).owns_node(node_name):
                out.append(m)
        return out

    for kind, i in events:
        member = UNIVERSE[i % len(UNIVERSE)]
        if kind == "join" and member not in live:
            live.add(member)
            view[member] = tuple(sorted(live))
            read[member] = 0
            mine.pop(member, None)
        elif kind == "leave" and member in live and len(live) > 1:
            live.discard(member)  # it stops; its announcement stays until removed
        elif kind == "see" and member in live:
            view[member] = tuple(sorted(live))
        elif kind == "announce" and member in live:
            mine[member] = view[member]
            log.append((member, view[member]))
            read[member] = len(log)  # its own write is back: every earlier one is known
        elif kind == "read" and member in live:
            read[member] = min(len(log), read[member] + 1 + i % 3)
        elif kind == "retract" and member not in live and any(who == member for who, _ in log):
            log.append((member, None))
        for node_name in NODES:
            assert len(planners(node_name)) <= 1, (node_name, planners(node_name))


def test_once_every_instance_announced_and_read_the_others_every_node_has_its_owner() -> None:
    members = ("a", "b", "c")
    owners = {}
    for m in members:
        claims = {o: members for o in members if o != m}
        owners[m] = Partition(m, members, claims)
    for node_name in NODES:
        assert [m for m in members if owners[m].owns_node(node_name)] == [
            rendezvous_owner(f"node:{node_name}", members)
        ]


def test_the_shares_own_pods_on_a_borrowed_node_are_counted_once() -> None:
    part = settled("a")
    mine = own_group(part)
    far = next(f"n{i}" for i in range(20) if not part.owns_node(f"n{i}"))
    placed = [pod(f"m{k}", mine, node=far, phase="Running") for k in range(2)]
    snap = cluster(20, [*placed, pod("waiting", mine)], [group(mine)])
    share = share_of(snap, part)
    out, _ = share.snapshot(part, {})
    borrowing = share.borrowing(out, part, answers_for(snap, part))
    node_left = next(n for n in borrowing.nodes if n.name == far)
    # Its two running pods are in the session (the share holds its PodGroup's pods): the node shows all
    # its 4 cpu, and the session takes the 2 off itself.
    assert node_left.allocatable["cpu"] == Fraction(4) and node_left.max_pods == 10


def test_a_borrowing_session_judges_the_queue_by_the_whole_cluster() -> None:
    """Other instances' gangs fill most of their nodes' GPUs; a gang of the share that does not fit on its
    own full node is placed on the GPUs left there. The queue's allocation counts those gangs, so the
    cluster's total must too (shrunk nodes alone would say the queue already exceeds the cluster)."""
    a = settled("a")
    names = [f"n{i}" for i in range(40)]
    here = [n for n in names if a.owns_node(n)][:1]
    far = [n for n in names if not a.owns_node(n)][:3]
    gpus = {"cpu": Fraction(8), "nvidia.com/gpu": Fraction(2)}
    nodes = tuple(NodeObj(n, {}, (), False, dict(gpus), 110) for n in here + far)
    mine = [f"g{i}" for i in range(100) if a.owns(f"ns/g{i}")][:2]
    theirs = [f"g{i}" for i in range(100) if not a.owns(f"ns/g{i}")][:2]
    ask = {"cpu": Fraction(1), "nvidia.com/gpu": Fraction(1)}

    def gang(name: str, at: str = "") -> list[PodObj]:
        phase = "Running" if at else "Pending"
        return [msgspec.structs.replace(pod(f"{name}-{k}", name, node=at, phase=phase), requests=ask) for k in range(2)]

    pods = [*gang(mine[0], here[0]), *gang(theirs[0], far[0]), *gang(theirs[1], far[1]), *gang(mine[1])]
    groups = [
        replace(group(g, min_member=2), phase="Running" if g != mine[1] else "Inqueue", min_resources=ask)
        for g in (*mine, *theirs)
    ]
    snap = replace(cluster(0, pods, groups), nodes=nodes)
    share = share_of(snap, a)
    out, _ = share.snapshot(a, {})
    cycle = Cycle(out, a, "s", WHEN)
    first = plan_cycle(cycle, load_scheduler_conf(), CarriedState(), lambda: 0.0)
    assert first.result.binds == {}
    plan = plan_borrowing(
        first, share.borrowing(out, a, answers_for(snap, a)), left_over(out, {}), load_scheduler_conf(), cycle
    )
    assert plan.result.binds == {f"ns/{mine[1]}-0": far[2], f"ns/{mine[1]}-1": far[2]}


def test_an_owner_sent_only_its_shards_pods_sees_the_others_on_its_nodes_and_the_clusters_use() -> None:
    """What a node's owner will be sent is its own shards' pods; the other shards' pods on its nodes are
    in their owners' `away` records, and the use of the others' nodes in their `used` records: together
    each own node holds every pod on it, and the others' nodes their whole use."""
    members = ("a", "b", "c")
    part = Partition("a", members)
    nodes = [f"n{i}" for i in range(12)]
    pods = [pod(f"p{i}", f"g{i}", node=nodes[i % len(nodes)], phase="Running") for i in range(200)]
    full, mine = ClusterIndex(), ClusterIndex()
    for index in (full, mine):
        index.regroup(part.owns, part.owns_node, part.shards)
    for p in pods:
        full.stored_pod(p.key, p)
        if part.owns(f"ns/{p.group_name}"):
            mine.stored_pod(p.key, p)
    theirs = frozenset(range(SHARDS)) - part.shards
    tally = ShardTally()
    for member in members[1:]:
        other = Partition(member, members)
        full.count_shards(tally, other.shards, other.owns_node)
    for key, value in tally.flush(1, theirs):
        assert mine.others.apply(key, value)
    assert any(not part.owns(f"ns/{p.group_name}") and part.owns_node(p.node_name) for p in pods)
    for name in nodes:
        if part.owns_node(name):
            got = set(mine.by_node.get(name, {})) | {p.uid for p in mine.away_on(name, ()).values()}
            assert got == {p.uid for p in pods if p.node_name == name}, name
            gone = next(iter(mine.away_on(name, ()).values())).uid
            assert gone not in {p.uid for p in mine.away_on(name, {gone}).values()}  # (seen deleted)
    used = sum(1.0 for p in pods if not part.owns_node(p.node_name))
    assert _close(dict(mine.outside().used), {"cpu": used})
    # Its share's snapshot holds them on its nodes, as pods that occupy the node (a seen deletion aside).
    held = [p for p in pods if part.owns(f"ns/{p.group_name}")]
    snap = ClusterSnapshot(nodes=tuple(node(n) for n in nodes), pods=tuple(held), podgroups=(), queues=())
    away_uid = next(p.uid for p in pods if not part.owns(f"ns/{p.group_name}") and part.owns_node(p.node_name))
    for p in held:
        mine.place(p.key, None, p)
    share = Share(lambda: snap, {p.key: p for p in held}.get, mine, gone=lambda: {away_uid})
    taken, _ = share.snapshot(part, {})
    on_own = {p.uid for p in taken.pods if part.owns_node(p.node_name)}
    assert on_own == {p.uid for p in pods if part.owns_node(p.node_name)} - {away_uid}

"""What shard owners publish (ShardTally) adds up, at every reader (OtherShards), to the whole cluster."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vc_core.ownership import balanced_owners, rendezvous_owner
from vc_proto.pod_shards import SHARDS
from vc_scheduler.shard_records import (
    MAX_NAMESPACES,
    MAX_STATUSES,
    NODE_GROUPS,
    AwayNodes,
    AwayPod,
    OtherShards,
    QueueSums,
    ShardTally,
    away_key,
    decode_sums,
    decode_use,
    node_group,
    parse_key,
    sums_key,
    used_key,
)

QUEUES = ("default", "q1", "q2")
NODES = tuple(f"n{i}" for i in range(12))


@dataclass
class Pod:
    shard: int
    queue: str
    node: str  # "": pending
    cpu: float
    name: str = field(default_factory=lambda: f"p{next(_NAMES)}")

    @property
    def namespace(self) -> str:
        return f"ns{self.shard % 3}"

    @property
    def status(self) -> str:
        return "bound" if self.node else "pending"


_NAMES = itertools.count()


class Instance:
    """One scheduler instance: the pods of its shards counted in a tally, and a reader of the others."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tally = ShardTally()
        self.others = OtherShards()
        self.shards: frozenset[int] = frozenset()
        self.nodes: frozenset[str] = frozenset()

    def count(self, pod: Pod, sign: int) -> None:
        amounts = {"cpu": pod.cpu}
        self.tally.count(pod.shard, pod.queue, amounts, amounts, 1, int(bool(pod.node)), sign, namespace=pod.namespace)
        self.tally.status(pod.shard, pod.queue, {pod.status: 1}, sign)
        if pod.node:
            self.tally.occupy(pod.shard, pod.queue, {**amounts, "pods": 1.0}, sign)
            self.tally.use(pod.shard, amounts, sign)
        if pod.node and pod.node not in self.nodes:
            self.tally.away(pod.shard, pod.node, f"ns.{pod.shard}.{pod.name}", pod.name, amounts, sign)


class Cluster:
    def __init__(self, members: list[str], pods: list[Pod]) -> None:
        self.pods = pods
        self.revision = 0
        self.members: list[str] = []
        self.instances: dict[str, Instance] = {}
        self.bucket: dict[str, bytes] = {}
        self.regroup(members)

    def regroup(self, members: list[str]) -> None:
        """The members changed: every instance counts its shards anew (its pods from their start, as
        ClusterIndex.regroup does) and writes every record of them again, deleting what it no longer
        counts."""
        for name in members:
            if name not in self.instances:  # (a new instance reads the bucket from its start)
                inst = self.instances[name] = Instance(name)
                for key, value in self.bucket.items():
                    assert inst.others.apply(key, value)
        owners = balanced_owners(SHARDS, tuple(members))
        for name, inst in list(self.instances.items()):
            shards = frozenset(s for s in range(SHARDS) if owners[s] == name) if name in members else frozenset()
            nodes = frozenset(n for n in NODES if rendezvous_owner(f"node:{n}", tuple(members)) == name)
            inst.shards, inst.nodes, inst.tally = shards, nodes, ShardTally()
            for pod in self.pods:
                if pod.shard in shards:
                    inst.count(pod, 1)
            for shard in shards:
                inst.tally.rewrite(shard, inst.others.stored(shard))
            inst.others.own(shards)
            if name not in members:
                del self.instances[name]
        self.members = members
        self.flush()

    def owner(self, pod: Pod) -> Instance:
        return next(inst for inst in self.instances.values() if pod.shard in inst.shards)

    def flush(self) -> None:
        self.revision += 1
        for inst in self.instances.values():
            for key, value in inst.tally.flush(self.revision, inst.shards):
                if value is None:
                    self.bucket.pop(key, None)
                else:
                    self.bucket[key] = value
                for reader in self.instances.values():
                    assert reader.others.apply(key, value)

    def check(self) -> None:
        truth_queue: dict[str, tuple[float, float, int, int]] = {}
        truth_node: dict[str, tuple[float, int]] = {}
        for pod in self.pods:
            r, a, asked, placed = truth_queue.get(pod.queue, (0.0, 0.0, 0, 0))
            placed_cpu = pod.cpu if pod.node else 0.0
            truth_queue[pod.queue] = (r + pod.cpu, a + placed_cpu, asked + 1, placed + bool(pod.node))
            if pod.node:
                used, count = truth_node.get(pod.node, (0.0, 0))
                truth_node[pod.node] = (used + pod.cpu, count + 1)
        for inst in self.instances.values():
            for queue in QUEUES:
                own = [p for p in self.pods if p.shard in inst.shards and p.queue == queue]
                other = inst.others.queues.get(queue)
                request = sum(p.cpu for p in own) + (other.request.get("cpu", 0.0) if other else 0.0)
                allocated = sum(p.cpu for p in own if p.node) + (other.allocated.get("cpu", 0.0) if other else 0.0)
                asked = len(own) + (other.asked if other else 0)
                want = truth_queue.get(queue, (0.0, 0.0, 0, 0))
                assert request == pytest.approx(want[0]) and allocated == pytest.approx(want[1])
                assert asked == want[2]
                occupied = sum(1 for p in own if p.node) + (other.occupied.get("pods", 0.0) if other else 0.0)
                assert occupied == pytest.approx(want[3])
                statuses = Counter(p.status for p in own) + Counter(other.statuses if other else {})
                assert statuses == Counter(p.status for p in self.pods if p.queue == queue)
            # What the pods occupy on nodes, together: the own shards' and the others' records.
            used = sum(p.cpu for p in self.pods if p.node and p.shard in inst.shards) + inst.others.used.get("cpu", 0.0)
            assert used == pytest.approx(sum(p.cpu for p in self.pods if p.node))
            # What the pods placed hold by namespace: the own shards' pods and the others' records.
            namespaces: dict[str, float] = {}
            for pod in self.pods:
                if pod.node and pod.shard in inst.shards:
                    namespaces[pod.namespace] = namespaces.get(pod.namespace, 0.0) + pod.cpu
            for totals in inst.others.queues.values():
                for namespace, held in totals.namespaces.items():
                    namespaces[namespace] = namespaces.get(namespace, 0.0) + held.get("cpu", 0.0)
            truth = Counter[str]()
            for pod in self.pods:
                if pod.node:
                    truth[pod.namespace] += pod.cpu  # type: ignore[assignment]
            assert {n: v for n, v in namespaces.items() if abs(v) > 1e-9} == pytest.approx(dict(truth))
            for node in inst.nodes:
                own = [p for p in self.pods if p.shard in inst.shards and p.node == node]
                away, count = inst.others.away_on(node)
                used, pods = truth_node.get(node, (0.0, 0))
                assert sum(p.cpu for p in own) + away.get("cpu", 0.0) == pytest.approx(used)
                assert len(own) + count == pods


pods_strategy = st.lists(
    st.builds(
        Pod,
        shard=st.integers(0, SHARDS - 1),
        queue=st.sampled_from(QUEUES),
        node=st.sampled_from(("", *NODES)),
        cpu=st.sampled_from((0.5, 1.0, 2.0, 4.0)),
    ),
    max_size=60,
)
member_sets = st.lists(st.sampled_from(("a", "b", "c", "d")), min_size=1, max_size=4, unique=True)
changes = st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(("bind", "finish", "create"))), max_size=20)


@settings(max_examples=60, deadline=None)
@given(pods_strategy, member_sets, changes, member_sets)
def test_own_pods_plus_the_others_records_are_the_whole_cluster(
    pods: list[Pod], members: list[str], moves: list[tuple[int, str]], later: list[str]
) -> None:
    cluster = Cluster(members, pods)
    cluster.check()
    for pick, what in moves:
        if what == "create" or not cluster.pods:
            pod = Pod(pick % SHARDS, QUEUES[pick % len(QUEUES)], "", 1.0)
            cluster.pods.append(pod)
            cluster.owner(pod).count(pod, 1)
        else:
            pod = cluster.pods[pick % len(cluster.pods)]
            owner = cluster.owner(pod)
            owner.count(pod, -1)
            if what == "finish":
                cluster.pods.remove(pod)
            else:
                pod.node = NODES[pick % len(NODES)] if not pod.node else ""
                owner.count(pod, 1)
        if pick % 3 == 0:
            cluster.flush()
    cluster.flush()
    cluster.check()
    cluster.regroup(later)
    cluster.check()


def test_a_flush_writes_only_what_moved_and_deletes_what_emptied() -> None:
    tally = ShardTally()
    tally.count(3, "q", {"cpu": 1.0}, {"cpu": 1.0}, 1, 1, 1, namespace="ns")
    tally.away(3, "n1", "ns.3.p", "u", {"cpu": 1.0}, 1)
    written = dict(tally.flush(7, frozenset({3})))
    assert set(written) == {sums_key(3, "q"), away_key(3, node_group("n1"))}
    sums = decode_sums(written[sums_key(3, "q")] or b"")
    assert sums is not None and sums.revision == 7 and sums.placed == 1
    assert tally.flush(8, frozenset({3})) == []
    tally.away(3, "n1", "ns.3.p", "u", {"cpu": 1.0}, -1)
    tally.count(3, "q", {"cpu": 1.0}, {"cpu": 1.0}, 1, 1, -1, namespace="ns")
    assert dict(tally.flush(9, frozenset({3}))) == {sums_key(3, "q"): None, away_key(3, node_group("n1")): None}


def test_a_shard_not_owned_is_not_written_and_stays_to_write_once_owned() -> None:
    tally = ShardTally()
    tally.count(5, "q", {"cpu": 2.0}, {}, 1, 0, 1, namespace="ns")
    assert tally.flush(1, frozenset({4})) == []
    assert [key for key, _ in tally.flush(2, frozenset({5}))] == [sums_key(5, "q")]


def test_a_reader_leaves_its_own_shards_out_of_the_totals() -> None:
    reader = OtherShards()
    record = QueueSums(4, {"cpu": 1.0}, {}, {}, asked=1)
    assert reader.apply(sums_key(2, "q"), msgspec.json.encode(record))
    assert reader.queues["q"].request == {"cpu": 1.0}
    reader.own(frozenset({2}))
    assert "q" not in reader.queues
    assert reader.stored(2) == ["q"]
    reader.own(frozenset())
    assert reader.queues["q"].asked == 1
    assert reader.apply(sums_key(2, "q"), None) and "q" not in reader.queues


def test_records_that_break_a_rule_are_refused_and_count_as_deleted() -> None:
    reader = OtherShards()
    good = msgspec.json.encode(AwayNodes(1, {"n1": {"ns.0.p": AwayPod("u", {"cpu": 1.0})}}))
    key = away_key(0, node_group("n1"))
    assert reader.apply(key, good) and reader.away_on("n1") == ({"cpu": 1.0}, 1)
    assert reader.pods_away_on("n1") == {"ns.0.p": AwayPod("u", {"cpu": 1.0})}
    assert not reader.apply(key, b"not json")
    assert reader.away_on("n1") == ({}, 0)
    assert not reader.apply(
        key, msgspec.json.encode(AwayNodes(1, {"n1": {"ns.0.p": AwayPod("u", {"cpu": float("nan")})}}))
    )
    assert not reader.apply(key, msgspec.json.encode(AwayNodes(-1, {})))
    assert not reader.apply("plans.a", good)
    assert decode_sums(b'{"revision":1,"request":{"cpu":1e999},"allocated":{},"reserved":{}}') is None
    assert decode_sums(b'{"revision":1,"request":{},"allocated":{},"reserved":{},"asked":-1}') is None
    empty = b'"revision":1,"request":{},"allocated":{},"reserved":{}'
    assert decode_sums(b"{" + empty + b',"statuses":{"bound":-1}}') is None
    too_many = {f"s{i}": 1 for i in range(MAX_STATUSES + 1)}
    assert decode_sums(b"{" + empty + b',"statuses":' + msgspec.json.encode(too_many) + b"}") is None
    spaces = {f"ns{i}": {"cpu": 1.0} for i in range(MAX_NAMESPACES + 1)}
    assert decode_sums(b"{" + empty + b',"namespaces":' + msgspec.json.encode(spaces) + b"}") is None
    assert decode_sums(b"{" + empty + b',"namespaces":{"ns":{"cpu":1e999}}}') is None
    assert decode_sums(b"{" + empty + b',"statuses":{"bound":2},"namespaces":{"ns":{"cpu":1.0}}}') is not None
    assert decode_use(b'{"revision":1,"used":{"cpu":1.0},"pods":-1}') is None
    assert decode_use(b'{"revision":1,"used":{"cpu":1e999},"pods":1}') is None
    assert not reader.apply(used_key(3), b"[]") and reader.used == {}
    assert reader.apply(used_key(3), b'{"revision":1,"used":{"cpu":2.0},"pods":1}') and reader.used == {"cpu": 2.0}
    assert reader.apply(used_key(3), None) and reader.used == {"cpu": 0.0}


def test_a_queue_with_only_finished_pods_keeps_its_record_for_their_count() -> None:
    tally, reader = ShardTally(), OtherShards()
    tally.status(3, "q", {"succeeded": 2}, 1)
    (key, value), *_ = tally.flush(1, frozenset({3}))
    assert key == sums_key(3, "q") and reader.apply(key, value)
    assert reader.queues["q"].statuses == {"succeeded": 2}
    tally.status(3, "q", {"succeeded": 2}, -1)
    assert tally.flush(2, frozenset({3})) == [(sums_key(3, "q"), None)]


@pytest.mark.parametrize(
    ("key", "parsed"),
    [
        ("sums.0.q", (0, "q")),
        ("used.3", (3, None)),
        ("used.64", None),
        ("used.x", None),
        ("sums.63.a_b", (63, "a.b")),
        ("sums.0", None),
        (f"away.1.{NODE_GROUPS - 1}", (1, NODE_GROUPS - 1)),
        ("sums.64", None),
        (f"away.1.{NODE_GROUPS}", None),
        ("away.1", None),
        ("sums.-1", None),
        ("sums.1.", None),
        ("sums.1.a.b", None),
        ("queue.q", None),
    ],
)
def test_record_keys(key: str, parsed: tuple[int, str | int] | None) -> None:
    assert parse_key(key) == parsed


def test_a_record_that_emptied_before_it_was_ever_written_is_not_deleted() -> None:
    tally = ShardTally()
    tally.count(3, "q", {"cpu": 1.0}, {}, 1, 0, 1, namespace="ns")
    tally.count(3, "q", {"cpu": 1.0}, {}, 1, 0, -1, namespace="ns")
    assert tally.flush(1, frozenset({3})) == []
    tally.rewrite(3, ["q"])  # (taken over: the bucket holds one, from its old owner)
    assert tally.flush(2, frozenset({3})) == [(sums_key(3, "q"), None)]


def test_a_write_that_failed_is_written_at_the_next_flush_a_deletion_too() -> None:
    tally = ShardTally()
    tally.count(3, "q", {"cpu": 1.0}, {}, 1, 0, 1, namespace="ns")
    written = tally.flush(1, frozenset({3}))
    tally.again([key for key, _ in written])
    assert tally.flush(2, frozenset({3})) == [
        (sums_key(3, "q"), written[0][1].replace(b'"revision":1', b'"revision":2'))
    ]  # type: ignore[union-attr]
    tally.count(3, "q", {"cpu": 1.0}, {}, 1, 0, -1, namespace="ns")
    deleted = tally.flush(3, frozenset({3}))
    assert deleted == [(sums_key(3, "q"), None)]
    tally.again([sums_key(3, "q")])
    assert tally.flush(4, frozenset({3})) == deleted

"""Settled PodGroups held out of an instance's sessions: Running with every pod running, Completed with
every pod succeeded, or Inqueue waiting for their pods; unchanged since a session reported them. Their
pods stay on the nodes and their sums count outside the share, so a session decides and reports what it
would over every PodGroup, and any change brings one back."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from fractions import Fraction
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.scheduler_service.service_builders import group, node, offline_loop, pod, publish_others
from tests.unit.scheduler_service.test_share import (
    MEMBERS,
    OPS,
    WHEN,
    _close,
    _step,
    cluster,
    feed,
    scratch_outside,
)
from vc_bus.kvwatch import RawEntry
from vc_core.store import WatchOp
from vc_proto.subjects import object_key
from vc_sched_core.cycle import load_scheduler_conf, run_cycle
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.snapshot.cluster import ClusterSnapshot, PodGroupObj, QueueObj
from vc_scheduler import loop as loop_module
from vc_scheduler import metrics
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.loop import SchedulingLoop
from vc_scheduler.planning import Cycle, plan_cycle
from vc_scheduler.share import Partition, Share, holds_settled_out


def feed_changes(index: ClusterIndex, before: ClusterSnapshot | None, after: ClusterSnapshot) -> None:
    """Hand `index` what changed from `before` to `after`, object by object, as the cache does (only
    the objects it replaces: an unchanged PodGroup is not stored again)."""
    feed(index, before, after, frozenset(), changed_only=True)


class Outside:
    """The PodGroups whose sums count outside: another instance's, or held out."""

    def __init__(self, partition: Partition, held: set[str]) -> None:
        self.partition, self.held = partition, held

    def owns(self, key: str) -> bool:
        return self.partition.owns(key) and key not in self.held


def scratch_settled(snap: ClusterSnapshot, pg: PodGroupObj) -> bool:
    pods = [p for p in snap.pods if p.group_name == pg.name]
    if pg.phase == "Inqueue":
        return pg.min_member >= 1 and not pods
    enough = len(pods) >= max(pg.min_member, 1)
    if pg.phase == "Completed":
        return enough and all(p.phase == "Succeeded" and not p.deleting for p in pods)
    running = all(p.node_name and p.phase == "Running" and not p.deleting for p in pods)
    return pg.phase == "Running" and running and enough


WAITING = replace(group("g4", queue="ops", min_member=2), min_resources={"cpu": Fraction(3)})


def running_cluster() -> ClusterSnapshot:
    """Three nodes; three Running PodGroups of two queues, each with its pods running, a Completed one
    whose pods succeeded, and an Inqueue one whose pods are not created yet."""
    done = (pod("d0", "g3", node="n0", phase="Succeeded"), pod("d1", "g3", node="n1", phase="Succeeded"))
    return ClusterSnapshot(
        nodes=(node("n0"), node("n1"), node("n2")),
        pods=tuple(pod(f"p{i}", f"g{i % 3}", node=f"n{i % 3}", phase="Running") for i in range(6)) + done,
        podgroups=(
            *(replace(group(f"g{i}", queue=("dev", "ops")[i % 2]), phase="Running") for i in range(3)),
            replace(group("g3", queue="dev", min_member=2), phase="Completed"),
            WAITING,
        ),
        queues=(QueueObj("dev"), QueueObj("ops")),
    )


SETTLE_OPS = (*OPS, "spawn")


def _settle_step(snap: ClusterSnapshot, op: str, i: int) -> ClusterSnapshot:
    """test_share's changes, and `spawn`: the controller creates a pod of the waiting PodGroup."""
    if op != "spawn":
        return _step(snap, frozenset(), op, i)[0]
    taken = {p.name for p in snap.pods}  # (a new name: one taken is another pod's, or a deleted one's)
    name = next(f"s{i}-{k}" for k in range(len(snap.pods) + 1) if f"s{i}-{k}" not in taken)
    spawned = msgspec.structs.replace(pod(name, "g4"), order=len(snap.pods))
    return replace(snap, pods=(*snap.pods, spawned))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.sampled_from(SETTLE_OPS), st.integers(0, 30)), max_size=3),
            st.lists(st.tuples(st.sampled_from(SETTLE_OPS), st.integers(0, 30)), max_size=3),
        ),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
)
def test_held_podgroups_count_outside_and_any_change_brings_one_back(steps: list[Any], alone: bool) -> None:
    """Cycles as the loop runs them: a snapshot (`wake`), changes while the session plans, `settle` with
    the PodGroups it reported, changes before the next snapshot. The sums outside are always those of
    the other instances' PodGroups and the held ones, built anew; at a snapshot every held PodGroup is
    settled, and one held is one that was settled when its session reported it."""
    snap = running_cluster()
    partition = Partition("a", ("a",) if alone else MEMBERS)
    index = ClusterIndex()
    index.regroup(partition.owns, partition.owns_node, partition.shards)
    feed_changes(index, None, snap)
    held_ever = False
    for during, after in steps:
        index.wake()
        reported = snap
        for batch in (during, after):
            before = snap
            for op, i in batch:
                if op != "assume":  # (assumed binds are the cycle's side: no stored change)
                    snap = _settle_step(snap, op, i)
            feed_changes(index, before, snap)
            if batch is during:
                already = set(index.held)
                index.settle(pg.key for pg in reported.podgroups if partition.owns(pg.key))
                # Held only if settled as the session saw it and unchanged since.
                for key in index.held - already:
                    pg = next(g for g in snap.podgroups if g.key == key)
                    assert scratch_settled(reported, pg) and scratch_settled(snap, pg)
                held_ever |= bool(index.held)
            publish_others(index, partition)
            outside, expected = index.outside(), scratch_outside(snap, Outside(partition, index.held))  # type: ignore[arg-type]
            for queue in set(expected) | set(outside.queues):
                sums = outside.queues.get(queue)
                got = (sums.request, sums.allocated, sums.reserved) if sums else ({}, {}, {})
                want = expected.get(queue, ({}, {}, {}))
                assert all(_close(dict(g), w) for g, w in zip(got, want, strict=True)), queue
        index.wake()
        groups = {pg.key: pg for pg in snap.podgroups}
        assert all(key in groups and scratch_settled(snap, groups[key]) for key in index.held)
    if alone and not steps[0][0]:
        assert held_ever  # (the first session reported four settled PodGroups, unchanged while it ran)


def alone_index_settled(snap: ClusterSnapshot) -> ClusterIndex:
    """The index of an instance alone, fed `snap`, after a session that reported every PodGroup of it."""
    index = ClusterIndex()
    alone = Partition("a", ("a",))
    index.regroup(alone.owns, alone.owns_node, alone.shards)
    feed_changes(index, None, snap)
    index.wake()
    index.settle(pg.key for pg in snap.podgroups)
    return index


def test_a_change_of_members_brings_every_held_podgroup_back() -> None:
    snap = running_cluster()
    index = alone_index_settled(snap)
    assert index.held == {pg.key for pg in snap.podgroups} and index.waiting == {"ns/g4"}
    assert index.outside().queues["dev"].allocated == {"cpu": 4.0}
    two = Partition("a", MEMBERS)
    index.regroup(two.owns, two.owns_node, two.shards)
    assert index.held == set() and index.waiting == set()
    publish_others(index, two)
    expected = scratch_outside(snap, two)
    assert {q: dict(s.allocated) for q, s in index.outside().queues.items() if s.allocated} == {
        q: sums[1] for q, sums in expected.items() if sums[1]
    }


def test_a_gang_waiting_for_its_pods_is_held_with_its_reservation_outside_until_a_pod_comes() -> None:
    """Inqueue with no pod yet (its controller creates them once it is Inqueue): held, its unplaced
    minResources reserved outside the share; its first pod brings it back. Without a gang to wait for,
    or not yet Inqueue, it stays in the sessions."""
    snap = ClusterSnapshot(
        nodes=(node("n0"),),
        pods=(),
        podgroups=(
            WAITING,
            group("none", queue="ops", min_member=0),
            replace(group("new", queue="ops"), phase="Pending"),
        ),
        queues=(QueueObj("ops"),),
    )
    index = alone_index_settled(snap)
    assert index.held == index.waiting == {"ns/g4"}
    assert index.outside().queues["ops"].reserved == {"cpu": 3.0}
    spawned = replace(snap, pods=(pod("s0", "g4"),))
    feed_changes(index, snap, spawned)
    index.wake()
    assert index.held == index.waiting == set()
    assert not any(index.outside().queues["ops"].reserved.values())


def test_alone_a_waiting_gangs_reservation_still_bounds_what_its_queue_enqueues() -> None:
    """The held gang's reservation counts outside: a Pending gang of the same queue that would pass its
    capability without it is refused as a session over every PodGroup refuses it, and each reports the
    same of it; the waiting gang's own word (too few pods) is what the last session said."""
    waiting = replace(group("wait", queue="dev", min_member=3), min_resources={"cpu": Fraction(3)})
    later = replace(group("later", queue="dev", min_member=2), min_resources={"cpu": Fraction(2)}, phase="Pending")
    snap = cluster(3, [pod("l0", "later"), pod("l1", "later")], [waiting, later])
    snap = replace(snap, queues=(QueueObj("dev", capability={"cpu": Fraction(4)}),))
    alone = Partition("a", ("a",))
    whole = run_cycle(snap, now=WHEN, session_uid="s")
    assert whole.podgroups["ns/later"].phase == "Pending"  # 3 reserved + 2 asked > 4
    without = run_cycle(replace(snap, podgroups=(later,)), now=WHEN, session_uid="s")
    assert without.podgroups["ns/later"].phase == "Inqueue"  # (so the reservation is what refuses it)
    share = settled_share(snap, alone)
    out, _ = share.snapshot(alone, {})
    assert [pg.name for pg in out.podgroups] == ["later"] and share.held == 1
    planned = plan_cycle(
        Cycle(out, alone, "s", WHEN, held_out=share.held), load_scheduler_conf(), CarriedState(), lambda: 0.0
    )
    assert planned.result.podgroups["ns/later"] == whole.podgroups["ns/later"]
    assert planned.result.queues == whole.queues and planned.owned == 2


# -- the share's sessions --------------------------------------------------------------------------------


def settled_share(snap: ClusterSnapshot, partition: Partition) -> Share:
    """A share over `snap` whose index was fed it, and whose sessions reported every PodGroup once."""
    index = ClusterIndex()
    index.regroup(partition.owns, partition.owns_node, partition.shards)
    feed_changes(index, None, snap)
    publish_others(index, partition)
    share = Share(lambda: snap, {p.key: p for p in snap.pods}.get, index, hold_settled=True)
    first, _ = share.snapshot(partition, {})
    share.settle(first)
    return share


def test_alone_a_session_without_the_settled_podgroups_decides_and_reports_as_over_every_one() -> None:
    """One instance alone: the settled PodGroups (Running, and Completed) are left out of its snapshot,
    their pods stay on the nodes and their sums count outside, so a waiting gang goes where it would go
    and each queue reports what a session over the whole cluster reports."""
    running = [pod(f"r{i}", f"g{i % 4}", node=f"n{i % 3}", phase="Running") for i in range(8)]
    waiting = [pod(f"w{i}", "new") for i in range(3)]
    done = pod("d0", "done", node="n0", phase="Succeeded")
    groups = [replace(group(f"g{i}", queue=("dev", "ops")[i % 2]), phase="Running") for i in range(4)]
    groups.append(replace(group("done", queue="ops"), phase="Completed"))
    snap = cluster(3, [*running, done, *waiting], [*groups, group("new", queue="dev", min_member=3)])
    snap = replace(snap, queues=(QueueObj("dev", weight=2), QueueObj("ops")))
    alone = Partition("a", ("a",))
    share = settled_share(snap, alone)
    out, _ = share.snapshot(alone, {})
    assert [pg.name for pg in out.podgroups] == ["new"] and share.held == 5
    assert all(a is b for a, b in zip(out.pods, snap.pods, strict=True))  # every pod, the cache's own objects
    whole = run_cycle(snap, now=WHEN, session_uid="s")
    planned = plan_cycle(
        Cycle(out, alone, "s", WHEN, held_out=share.held), load_scheduler_conf(), CarriedState(), lambda: 0.0
    )
    assert planned.result.binds == whole.binds and len(planned.result.binds) == 3
    assert planned.result.queues == whole.queues
    assert planned.result.podgroups["ns/new"] == whole.podgroups["ns/new"]
    assert planned.owned == 6


def test_a_full_node_is_full_to_a_session_that_holds_its_podgroups_out() -> None:
    """The held PodGroups' pods still occupy their nodes: a gang that fits only where they are not goes
    there, and one that fits nowhere waits."""
    running = [pod(f"r{i}", "big", node="n0", phase="Running") for i in range(4)]  # n0 full (4 cpu)
    snap = cluster(2, [*running, pod("w0", "two", phase="Pending"), pod("w1", "two")], [])
    snap = replace(snap, podgroups=(replace(group("big", min_member=4), phase="Running"), group("two", min_member=2)))
    alone = Partition("a", ("a",))
    share = settled_share(snap, alone)
    out, _ = share.snapshot(alone, {})
    assert [pg.name for pg in out.podgroups] == ["two"]
    planned = plan_cycle(Cycle(out, alone, "s", WHEN), load_scheduler_conf(), CarriedState(), lambda: 0.0)
    assert set(planned.result.binds.values()) == {"n1"}


def test_a_share_of_several_instances_holds_out_its_settled_podgroups_too() -> None:
    part = Partition("a", MEMBERS)
    mine = [f"g{i}" for i in range(40) if part.owns(f"ns/g{i}")][:3]
    here = next(f"n{i}" for i in range(20) if part.owns_node(f"n{i}"))
    pods = [pod(f"p-{g}", g, node=here, phase="Running") for g in mine]
    snap = cluster(20, pods, [replace(group(g), phase="Running") for g in mine])
    share = settled_share(snap, part)
    out, _ = share.snapshot(part, {})
    assert out.podgroups == () and {p.name for p in out.pods} == {p.name for p in pods}
    assert out.outside is not None and out.outside.queues["default"].allocated == {"cpu": 3.0}


def test_only_a_conf_whose_sessions_ask_nothing_more_of_a_settled_job_holds_them_out() -> None:
    assert holds_settled_out(load_scheduler_conf())
    preempting = 'actions: "enqueue, allocate, preempt, backfill"\ntiers:\n- plugins:\n  - name: gang\n'
    assert not holds_settled_out(load_scheduler_conf(preempting))
    hierarchy = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n'
    assert not holds_settled_out(load_scheduler_conf(hierarchy))
    quota = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n  - name: resourcequota\n'
    assert not holds_settled_out(load_scheduler_conf(quota))


# -- the loop ---------------------------------------------------------------------------------------------


GROUP = "scheduling.k8s.io/group-name"


class Feed:
    """Stored objects into a cache, as its watches hand them over."""

    def __init__(self, cache: SchedulerCache) -> None:
        self.cache, self.revision = cache, 0

    @classmethod
    def with_node_and_queue(cls, cache: SchedulerCache) -> Feed:
        """A feed whose cache holds node n0 (4 cpu) and the queue `default`."""
        feed = cls(cache)
        node = {"kind": "Node", "metadata": {"name": "n0"}, "status": {"allocatable": {"cpu": "4"}}}
        feed.put("Node", None, "n0", node)
        feed.put("Queue", None, "default", {"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}})
        return feed

    def put(self, kind: str, namespace: str | None, name: str, doc: dict[str, Any]) -> None:
        self.revision += 1
        self.cache.apply(
            kind, RawEntry(WatchOp.PUT, self.revision, object_key(namespace, name), json.dumps(doc).encode())
        )

    def pod(self, name: str, node: str, phase: str) -> None:
        spec = {"schedulerName": "volcano", "nodeName": node, "containers": [{"resources": {"requests": {"cpu": "1"}}}]}
        metadata = {"name": name, "namespace": "ns", "uid": f"u-{name}", "annotations": {GROUP: "job"}}
        self.put("Pod", "ns", name, {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": phase}})

    def gang(self, phase: str, node: str, pod_phase: str) -> None:
        """The PodGroup `job` (minMember 2) in `phase`, and its pods a and b."""
        self.podgroup(phase)
        for name in ("a", "b"):
            self.pod(name, node, pod_phase)

    def podgroup(self, phase: str) -> None:
        doc = {
            "kind": "PodGroup",
            "metadata": {"name": "job", "namespace": "ns"},
            "spec": {"minMember": 2, "queue": "default"},
        }
        self.put("PodGroup", "ns", "job", {**doc, "status": {"phase": phase}})


def test_the_loop_holds_a_settled_podgroup_out_until_it_changes() -> None:
    """A gang placed, started and reported Running leaves the sessions after the one that saw it so (its
    status said, it counts among the owned); a pod of it failing brings it back, and the session reports
    its status again."""

    async def scenario() -> None:
        cache = SchedulerCache()
        feed = Feed.with_node_and_queue(cache)
        feed.gang("Inqueue", "", "Pending")
        loop = offline_loop(cache)
        placed = await loop.run_once()
        assert set(placed.binds) == {"ns/a", "ns/b"}
        for name in ("a", "b"):  # the binds land and the pods start; the status writer says Running
            feed.pod(name, "n0", "Running")
        feed.podgroup("Running")
        seen = await loop.run_once()  # the session that sees it settled
        assert "ns/job" in seen.podgroups and seen.podgroups["ns/job"].running == 2
        assert cache.index.held == {"ns/job"}
        await loop.run_once()
        plan = loop._last_plan
        assert plan is not None and plan.snapshot.podgroups == () and plan.owned == 1
        assert {p.name for p in plan.snapshot.pods} == {"a", "b"}  # still on n0
        feed.pod("b", "n0", "Failed")
        back = await loop.run_once()
        assert cache.index.held == set()
        assert back.podgroups["ns/job"].running == 1 and back.podgroups["ns/job"].failed == 1

    asyncio.run(scenario())


def test_a_held_jobs_share_series_stays_until_it_is_back_or_gone() -> None:
    recorder = metrics.ShareRecorder()
    recorder.record({"ns/a": 0.25, "ns/b": 0.5})
    recorder.record({"ns/b": 0.5}, held={"ns/a"})
    assert metrics.JOB_SHARE.labels("ns", "a")._value.get() == 0.25
    assert "ns/a" in recorder._series
    recorder.record({"ns/b": 0.5}, held=set())  # deleted while held: its series goes
    assert "ns/a" not in recorder._series
    recorder.record({"ns/a": 0.3, "ns/b": 0.5})
    recorder.record({"ns/b": 0.5}, held={"ns/a"})
    recorder.record({"ns/a": 0.35, "ns/b": 0.5}, held=set())  # back in a session
    assert "ns/a" in recorder._series and metrics.JOB_SHARE.labels("ns", "a")._value.get() == 0.35


async def held_running_gang() -> tuple[SchedulerCache, Feed, SchedulingLoop]:
    """A loop over node n0 and the gang `job` Running there, after the cycle that held it out."""
    cache = SchedulerCache()
    feed = Feed.with_node_and_queue(cache)
    feed.gang("Running", "n0", "Running")
    loop = offline_loop(cache)
    await loop.run_once()
    assert cache.index.held == {"ns/job"}
    return cache, feed, loop


def test_a_held_jobs_share_follows_the_clusters_resources_as_a_session_over_every_job_would() -> None:
    """A node joining changes what every job's share divides by; the held job's series moves with it."""

    async def scenario() -> None:
        cache, feed, loop = await held_running_gang()
        assert metrics.JOB_SHARE.labels("ns", "job")._value.get() == 0.5  # 2 of n0's 4 cpu
        node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "12"}}}
        feed.put("Node", None, "n1", node)
        await loop.run_once()
        assert cache.index.held == {"ns/job"}
        whole = run_cycle(cache.snapshot(), now=WHEN, session_uid="s")
        assert whole.stats.job_shares["ns/job"] == 0.125
        assert metrics.JOB_SHARE.labels("ns", "job")._value.get() == whole.stats.job_shares["ns/job"]

    asyncio.run(scenario())


def test_a_held_jobs_share_counts_a_resource_the_cluster_lacks_as_whole() -> None:
    assert metrics.dominant_share({"cpu": 2.0, "gpu": 1.0}, {"cpu": 8.0}) == 1.0
    assert metrics.dominant_share({"cpu": 2.0}, {"cpu": 8.0, "gpu": 0.0}) == 0.25
    assert metrics.dominant_share({}, {"cpu": 8.0}) == 0.0


def test_the_cycle_log_counts_the_podgroups_held_out(monkeypatch: Any) -> None:
    logged: list[dict[str, object]] = []

    class Recording:
        def info(self, event: str, **fields: object) -> None:
            if event == "cycle.finished":
                logged.append(fields)

    monkeypatch.setattr(loop_module, "log", Recording())

    async def scenario() -> None:
        _, feed, loop = await held_running_gang()
        late = {"kind": "PodGroup", "metadata": {"name": "late", "namespace": "ns"}, "spec": {"minMember": 1}}
        feed.put("PodGroup", "ns", "late", {**late, "status": {"phase": "Inqueue"}})
        spec = {"schedulerName": "volcano", "containers": [{"resources": {"requests": {"cpu": "1"}}}]}
        metadata = {"name": "c", "namespace": "ns", "uid": "u-c", "annotations": {GROUP: "late"}}
        feed.put("Pod", "ns", "c", {"kind": "Pod", "metadata": metadata, "spec": spec, "status": {"phase": "Pending"}})
        placed = await loop.run_once()
        assert set(placed.binds) == {"ns/c"}

    asyncio.run(scenario())
    assert logged[-1]["held"] == 1 and logged[-1]["owned"] == 2


def test_the_loop_holds_a_gang_out_while_its_pods_are_created_and_places_them_when_they_come() -> None:
    """Enqueued before its pods exist, a gang is reported once (too few pods) and then left out of the
    sessions; its pods arriving bring it back, and that session places them."""

    async def scenario() -> None:
        cache = SchedulerCache()
        feed = Feed.with_node_and_queue(cache)
        feed.podgroup("Inqueue")
        loop = offline_loop(cache)
        first = await loop.run_once()
        condition = first.podgroups["ns/job"].conditions[-1]
        assert condition.type == "Unschedulable" and "valid" in condition.message
        assert cache.index.held == cache.index.waiting == {"ns/job"}
        await loop.run_once()
        plan = loop._last_plan
        assert plan is not None and plan.snapshot.podgroups == () and plan.owned == 1
        for name in ("a", "b"):
            feed.pod(name, "", "Pending")
        placed = await loop.run_once()
        assert set(placed.binds) == {"ns/a", "ns/b"} and cache.index.waiting == set()

    asyncio.run(scenario())


def test_gangs_held_while_waiting_for_their_pods_count_among_the_unschedulable_jobs() -> None:
    snap = cluster(1, [pod("p0", "late", phase="Pending"), pod("p1", "late")], [group("late", min_member=3)])
    result = run_cycle(snap, now=WHEN, session_uid="s")
    assert metrics.unschedulable_jobs(result) == ["ns/late"]
    metrics.StateRecorder().refresh(result, snap, set(), held_unschedulable=frozenset({"ns/wait"}))
    assert metrics.UNSCHEDULE_JOBS._value.get() == 2
    assert metrics.UNSCHEDULE_TASKS.labels("ns/wait")._value.get() == 0

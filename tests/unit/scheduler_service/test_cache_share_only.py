"""A cache that holds whole only the pods of its instance's share: the others it is sent are brief (where
they are, their PodGroup, phase and requests) and count in the sums exactly as whole ones do; a pod the
share takes, on a change of members or as a loan on its node, is made whole from its stored bytes."""

from __future__ import annotations

import json
from typing import Any

from vc_bus.kvwatch import RawEntry
from vc_core.store import WatchOp
from vc_proto.subjects import object_key
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.share import Partition

GROUP = "scheduling.k8s.io/group-name"


def pod_doc(name: str, group: str, node: str = "", phase: str = "Pending") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "labels": {"app": name},
            "annotations": {GROUP: group},
        },
        "spec": {
            "schedulerName": "volcano",
            "nodeName": node,
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
            "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
        "status": {"phase": phase},
    }


def pg_doc(name: str) -> dict[str, Any]:
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"minMember": 1, "queue": "default"},
        "status": {"phase": "Inqueue"},
    }


def node_doc(name: str) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}


def stored_key(key: str) -> str:
    namespace, _, name = key.rpartition("/")
    return object_key(namespace or None, name)


class Feed:
    def __init__(self, *caches: SchedulerCache) -> None:
        self.caches = caches
        self.revision = 0

    def put(self, kind: str, key: str, doc: dict[str, Any]) -> None:
        """`key`: the cache's ("<namespace>/<name>", or the name)."""
        self.revision += 1
        entry = RawEntry(WatchOp.PUT, self.revision, stored_key(key), json.dumps(doc).encode())
        for cache in self.caches:
            cache.apply(kind, entry)

    def delete(self, kind: str, key: str) -> None:
        self.revision += 1
        for cache in self.caches:
            cache.apply(kind, RawEntry(WatchOp.DELETE, self.revision, stored_key(key)))


def picks(part: Partition) -> tuple[str, str, str, str]:
    mine = next(f"g{i}" for i in range(100) if part.owns(f"ns/g{i}"))
    theirs = next(f"g{i}" for i in range(100) if not part.owns(f"ns/g{i}"))
    here = next(f"n{i}" for i in range(100) if part.owns_node(f"n{i}"))
    there = next(f"n{i}" for i in range(100) if not part.owns_node(f"n{i}"))
    return mine, theirs, here, there


def sums(cache: SchedulerCache) -> tuple[Any, ...]:
    outside = cache.index.outside()
    return (
        outside.allocatable,
        outside.used,
        outside.queues,
        {n: cache.index.usage(n) for n in cache.nodes},
        dict(cache.index.states),
    )


def whole_and_brief(part: Partition) -> tuple[SchedulerCache, SchedulerCache, Feed]:
    """A cache holding every pod whole and a share-only one, both of `part`'s instance, fed alike."""
    whole, brief = SchedulerCache(), SchedulerCache(share_only=True)
    for cache in (whole, brief):
        cache.regroup(part.owns, part.owns_node, part.shards)
    return whole, brief, Feed(whole, brief)


def test_pods_outside_the_share_are_brief_and_count_as_whole_ones_do() -> None:
    part = Partition("a", ("a", "b"))
    whole, brief, feed = whole_and_brief(part)
    mine, theirs, here, there = picks(part)
    for name in (here, there):
        feed.put("Node", name, node_doc(name))
    feed.put("PodGroup", f"ns/{mine}", pg_doc(mine))  # (another's PodGroup it would not keep: below)
    feed.put("Pod", "ns/a", pod_doc("a", mine))  # of its PodGroup
    feed.put("Pod", "ns/b", pod_doc("b", theirs))  # another's, pending
    feed.put("Pod", "ns/c", pod_doc("c", theirs, node=there, phase="Running"))  # another's, on another's node
    feed.put("Pod", "ns/d", pod_doc("d", theirs, node=here, phase="Running"))  # another's, on its node
    assert brief.pods["ns/a"] == whole.pods["ns/a"] and brief.pods["ns/d"] == whole.pods["ns/d"]
    assert brief.pods["ns/b"].labels == {} and brief.pods["ns/b"].tolerations == ()
    assert brief.pods["ns/c"].node_name == there and brief.pods["ns/c"].requests == whole.pods["ns/c"].requests
    assert sums(brief) == sums(whole)
    # Bound, finished, deleted: the sums move as the whole cache's do.
    feed.put("Pod", "ns/b", pod_doc("b", theirs, node=there))
    feed.put("Pod", "ns/c", pod_doc("c", theirs, node=there, phase="Succeeded"))
    assert sums(brief) == sums(whole)
    feed.delete("Pod", "ns/c")
    assert sums(brief) == sums(whole) and "ns/c" not in brief.pods


def test_a_pod_the_share_takes_is_made_whole() -> None:
    """On a change of members (regroup), and as one bound onto the share's node (a loan)."""
    two = Partition("a", ("a", "b"))
    whole, brief, feed = whole_and_brief(two)
    _, theirs, here, there = picks(two)
    feed.put("Pod", "ns/b", pod_doc("b", theirs))
    assert brief.pods["ns/b"] != whole.pods["ns/b"]
    assert brief.full_pod("ns/b") == whole.pods["ns/b"] and brief.pods["ns/b"] == whole.pods["ns/b"]
    feed.put("Pod", "ns/e", pod_doc("e", theirs))
    feed.put("Pod", "ns/e", pod_doc("e", theirs, node=here))  # lent room on its node
    assert brief.pods["ns/e"] == whole.pods["ns/e"]
    feed.put("Pod", "ns/f", pod_doc("f", theirs, node=there))
    alone = Partition("a", ("a",))
    brief.regroup(alone.owns, alone.owns_node, alone.shards)
    assert brief.pods["ns/f"] == whole.pods["ns/f"]
    assert all(brief.full_pod(key) == pod for key, pod in whole.pods.items())


def bare(doc: dict[str, Any]) -> dict[str, Any]:
    """The pod naming no PodGroup (the podgroup controller has not named one yet)."""
    return {**doc, "metadata": {**doc["metadata"], "annotations": {}}}


def test_until_it_knows_its_share_it_holds_only_pods_naming_no_podgroup_brief() -> None:
    """Sent its own shards' pods from its first partition on, the cache decodes each that names a
    PodGroup whole at once (its PodGroups are its own); one naming none waits, brief, for the share to
    say whether it is on its nodes."""
    cache = SchedulerCache(share_only=True)
    feed = Feed(cache)
    feed.put("Pod", "ns/a", pod_doc("a", "g1"))
    feed.put("Pod", "ns/b", bare(pod_doc("b", "", node="n1", phase="Running")))
    assert cache.pods["ns/a"].labels == {"app": "a"} and cache.pods["ns/b"].labels == {}
    part = Partition("a", ("a",))
    cache.regroup(part.owns, part.owns_node, part.shards)
    assert cache.pods["ns/b"].labels == {"app": "b"} and cache.pods["ns/b"].tolerations


def test_a_brief_pod_that_cannot_be_made_whole_is_held_as_if_never_decoded(monkeypatch: Any) -> None:
    """As a pod whose stored value does not decode: reported, counted, and in no sum or session."""
    import vc_scheduler.cache as cache_module
    from vc_sched_core.snapshot.loader import SnapshotError

    cache = SchedulerCache(share_only=True)
    Feed(cache).put("Pod", "ns/a", bare(pod_doc("a", "", node="n1", phase="Running")))
    assert cache.index.usage("n1")[1] == 1

    def refuse(*_args: Any) -> object:
        raise SnapshotError(0, "Pod", "spec", "refused")

    monkeypatch.setattr(cache_module, "convert_view", refuse)
    assert cache.full_pod("ns/a") is None
    assert "ns/a" not in cache.pods and cache.decode_errors == 1 and cache.index.usage("n1") == ({}, 0)


def test_an_instance_its_membership_says_is_alone_decodes_each_pod_whole_once(monkeypatch: Any) -> None:
    """Alone, its share is the whole cluster: the pods of the sync after it knows are decoded whole at
    once, those naming no PodGroup too, and the first partition decodes only those that came before,
    brief."""
    cache = SchedulerCache(share_only=True)
    feed = Feed(cache)
    feed.put("Pod", "ns/early", bare(pod_doc("early", "", node="n2", phase="Running")))
    cache.expect_alone()
    feed.put("Pod", "ns/late", bare(pod_doc("late", "", node="n1", phase="Running")))
    assert cache.pods["ns/early"].labels == {} and cache.pods["ns/late"].labels == {"app": "late"}
    decoded: list[str] = []
    full_pod = cache.full_pod

    def counted(key: str) -> Any:
        decoded.append(key)
        return full_pod(key)

    monkeypatch.setattr(cache, "full_pod", counted)
    alone = Partition("a", ("a",))
    cache.regroup(alone.owns, alone.owns_node, alone.shards)
    assert decoded == ["ns/early"] and all(p.labels for p in cache.pods.values())


def test_a_member_that_joins_after_the_instance_thought_itself_alone_makes_its_share_decide_again() -> None:
    """Pods decoded whole while it thought itself alone stay correct; from their next change on, those
    outside the share it then gets are held brief. Once it knows its share, the membership's word on
    being alone changes nothing."""
    cache = SchedulerCache(share_only=True)
    feed = Feed(cache)
    two = Partition("a", ("a", "b"))
    _, theirs, _, there = picks(two)
    cache.expect_alone()
    feed.put("Pod", "ns/x", pod_doc("x", theirs, node=there))
    assert cache.pods["ns/x"].labels == {"app": "x"}  # whole: it thought the whole cluster its share
    cache.regroup(two.owns, two.owns_node, two.shards)
    feed.put("Pod", "ns/x", pod_doc("x", theirs, node=there, phase="Running"))
    assert cache.pods["ns/x"].labels == {}  # another instance's pod on another's node: brief again
    cache.expect_alone()  # too late: the share is known
    feed.put("Pod", "ns/y", pod_doc("y", theirs, node=there, phase="Running"))
    assert cache.pods["ns/y"].labels == {}


def test_a_share_only_cache_keeps_the_podgroups_of_its_shards_only() -> None:
    """Every PodGroup is delivered (its key names no shard); another instance's is dropped before it is
    decoded, and one of a shard the instance gives up goes at the change of members (not a deletion)."""
    two, three = Partition("a", ("a", "b")), Partition("a", ("a", "b", "c"))
    kept = next(f"g{i}" for i in range(1000) if two.owns(f"ns/g{i}") and three.owns(f"ns/g{i}"))
    lost = next(f"g{i}" for i in range(1000) if two.owns(f"ns/g{i}") and not three.owns(f"ns/g{i}"))
    theirs = next(f"g{i}" for i in range(1000) if not two.owns(f"ns/g{i}"))
    cache = SchedulerCache(share_only=True)
    cache.regroup(two.owns, two.owns_node, two.shards)
    feed = Feed(cache)
    for group in (kept, lost, theirs):
        feed.put("PodGroup", f"ns/{group}", pg_doc(group))
    assert set(cache.podgroups) == {f"ns/{kept}", f"ns/{lost}"}
    cache.regroup(three.owns, three.owns_node, three.shards)
    assert set(cache.podgroups) == {f"ns/{kept}"} and not cache.gone()

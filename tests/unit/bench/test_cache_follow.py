"""The cache-follow benchmark applies what it says: the share's pods synced, then bound, whole."""

from __future__ import annotations

from benchmarks.cache_follow import changes, follow_once
from benchmarks.pending_gangs import Shape
from vc_scheduler.share import Partition


def test_the_share_s_pods_are_followed_to_their_bind_and_held_whole() -> None:
    synced, binds = changes(Shape(nodes=20, pods=100))
    assert len(binds) == 100 and len(synced) == 20 + 10 + 100
    _, cache = follow_once(2, synced, binds)
    part = Partition("s0", ("s0", "s1"))
    mine = {key for key, pod in cache.pods.items() if part.owns(f"{pod.namespace}/{pod.group_name}")}
    assert 0 < len(cache.pods) < 100 and mine == cache.pods.keys()  # sent its shards' pods only
    assert all(pod.node_name for pod in cache.pods.values())
    assert {state.node for state in cache.index.states.values()} <= set(cache.nodes)
    assert not cache._brief_raw  # (every pod of its PodGroups is of its share)
    assert cache.holds(part.shards)

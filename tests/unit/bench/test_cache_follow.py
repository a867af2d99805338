"""The cache-follow benchmark applies what it says: every pod synced, then bound; the share whole."""

from __future__ import annotations

from benchmarks.cache_follow import changes, follow_once
from benchmarks.pending_gangs import Shape
from vc_scheduler.share import Partition


def test_every_pod_is_followed_to_its_bind_and_only_the_share_is_whole() -> None:
    synced, binds = changes(Shape(nodes=20, pods=100))
    assert len(binds) == 100 and len(synced) == 20 + 10 + 100
    _, cache = follow_once(2, synced, binds)
    assert len(cache.pods) == 100 and all(pod.node_name for pod in cache.pods.values())
    assert {state.node for state in cache.index.states.values()} <= set(cache.nodes)
    part = Partition("s0", ("s0", "s1"))
    share = {
        key
        for key, pod in cache.pods.items()
        if part.owns_node(pod.node_name) or part.owns(f"{pod.namespace}/{pod.group_name}")
    }
    assert 0 < len(share) < 100
    assert set(cache._brief_raw) == cache.pods.keys() - share

"""Memory per pod in the scheduler's cache: at the seeds' scale (1,000,000 pods) every process must hold
a pod in a few KB, where the pod's stored JSON alone is about 1.7 KB."""

from __future__ import annotations

from unittest import mock

import msgspec

from tests.support.memory import retained_bytes
from tests.unit.bench.bench_pods import gang_pod_lives, running_gang_pods
from vc_bus.kvwatch import RawEntry
from vc_core.store import WatchOp
from vc_proto.subjects import split_key
from vc_sched_core.framework.build import PREEMPTABLE_KEY, TASK_PRIORITY_KEY, TASK_SPEC_KEY
from vc_sched_core.snapshot.cluster import GROUP_NAME_ANNOTATION, POD_ANNOTATIONS_READ
from vc_sched_core.snapshot.vgpu import ASSIGNED_IDS, GROUP_NAME_KEYS
from vc_scheduler import cache as cache_module
from vc_scheduler.cache import SchedulerCache

PODS = 10_000
# What the cache and its cluster index hold per Running pod of the gang benchmark. Measured: 1.09 KB
# (the decoded view, its labels with shared text, one annotations dict for a gang's pods, one requests
# dict and one empty node selector for the pods that ask alike, the index's entries with its PodGroup
# key and its requests' amounts shared); 1.15 KB with the index's own record of where it put each pod,
# 1.4 KB with every annotation of each pod in a dict of its own, 2.3 KB with those dicts and keys per
# pod, 3.2 KB with a copy of every repeated string per pod as well.
MAX_BYTES_PER_POD = 1_150


def cached(key: str) -> str:
    """The cache's key of the pod stored under KV `key`."""
    namespace, name = split_key(key)
    return f"{namespace}/{name}"


def test_a_running_pod_costs_the_cache_at_most_its_bound() -> None:
    stored = running_gang_pods(PODS, nodes=1_000)

    def fill() -> SchedulerCache:
        cache = SchedulerCache()
        for revision, (key, value) in enumerate(stored, start=1):
            # Fresh bytes, as the watch delivers each entry anew: what the cache keeps of them counts.
            cache.apply("Pod", RawEntry(WatchOp.PUT, revision, key, memoryview(value).tobytes()))
        return cache

    cache, retained = retained_bytes(fill)

    assert len(cache.pods) == PODS and len(cache.assumed()) == 0
    assert all(pod.phase == "Running" and pod.node_name for pod in cache.pods.values())
    assert retained / PODS <= MAX_BYTES_PER_POD, f"{retained / PODS:.0f} bytes per pod"


def test_a_pod_created_bound_and_started_leaves_one_copy_of_its_key_and_uid() -> None:
    """Each change of a pod is decoded anew; what the cache and its index keep by the pod's key and uid
    must be one string each, not one per change (1.8 KB per pod after the three changes here, 1.5 KB
    with one copy, at 40,000 pods)."""
    lives = gang_pod_lives(200, nodes=20)
    cache, revision = SchedulerCache(), 0
    for version in range(3):  # every pod created, then every one bound, then every one Running
        for key, values in lives:
            revision += 1
            cache.apply("Pod", RawEntry(WatchOp.PUT, revision, key, memoryview(values[version]).tobytes()))

    index = cache.index
    keys = {key: key for key in cache.pods}
    uids = {pod.uid: pod.uid for pod in cache.pods.values()}
    assert all(pod.phase == "Running" for pod in cache.pods.values()) and len(keys) == len(lives)
    held_by_key = [*index._stored, *(k for on in index.pods_on.values() for k in on)]
    held_by_uid = [*index.states, *(u for on in index.by_node.values() for u in on)]
    assert all(keys[key] is key for key in held_by_key)
    assert all(uids[uid] is uid for uid in held_by_uid)


def test_the_stored_bytes_of_waiting_pods_are_kept_for_a_bounded_number() -> None:
    lives = gang_pod_lives(50, nodes=10)
    cache = SchedulerCache()
    with mock.patch.object(cache_module, "MAX_UNBOUND_KEPT", 20):
        for revision, (key, (created, _, _)) in enumerate(lives, start=1):
            cache.apply("Pod", RawEntry(WatchOp.PUT, revision, key, created))
        kept = [key for key, _ in lives if cache.stored_unbound(cached(key)) is not None]
        assert kept == [key for key, _ in lives[:20]]  # the first to come; the rest are read to bind

        first, (_, bound, _) = lives[0]
        cache.apply("Pod", RawEntry(WatchOp.PUT, 100, first, bound))  # bound: its bytes go
        newcomer, (created, _, _) = lives[-1]
        cache.apply("Pod", RawEntry(WatchOp.PUT, 101, newcomer, created))  # a change of a waiting pod
        assert cache.stored_unbound(cached(first)) is None
        assert cache.stored_unbound(cached(newcomer)) == (created, 101)
        assert len(cache._unbound_raw) == 20


def test_a_pod_that_moves_on_keeps_its_unchanged_parts_and_reads_as_a_fresh_decoding() -> None:
    """A bind and a start leave a pod's labels, annotations, selector and tolerations as they were: the
    new version holds the old version's objects (converted once, not shared anew per change), and the
    pod is what decoding its last version alone gives."""
    lives = gang_pod_lives(20, nodes=4)
    cache, revision = SchedulerCache(), 0
    first = {}
    for version in range(3):
        for key, values in lives:
            revision += 1
            cache.apply("Pod", RawEntry(WatchOp.PUT, revision, key, memoryview(values[version]).tobytes()))
        if version == 0:
            first = dict(cache.pods)
    for key, values in lives:
        now, was = cache.pods[cached(key)], first[cached(key)]
        assert now.phase == "Running" and now.node_name and not was.node_name
        assert now.labels is was.labels and now.node_selector is was.node_selector
        assert now.tolerations is was.tolerations
        assert now.annotations is was.annotations or now.annotations != was.annotations
        fresh = SchedulerCache()
        fresh.apply("Pod", RawEntry(WatchOp.PUT, 1, key, memoryview(values[2]).tobytes()))
        (alone,) = fresh.pods.values()
        assert alone == msgspec.structs.replace(now, order=alone.order)


def test_a_pods_view_keeps_the_annotations_a_scheduler_reads_one_dict_for_a_gang() -> None:
    """Every key the scheduler reads from a pod view is kept; the rest (task index, job version, the
    bound-by stamp) are not, so a gang's pods share one annotations dict."""
    readers = {GROUP_NAME_ANNOTATION, TASK_SPEC_KEY, TASK_PRIORITY_KEY, PREEMPTABLE_KEY, ASSIGNED_IDS, *GROUP_NAME_KEYS}
    assert readers <= POD_ANNOTATIONS_READ
    cache = SchedulerCache()
    for revision, (key, value) in enumerate(running_gang_pods(20, nodes=2), start=1):
        cache.apply("Pod", RawEntry(WatchOp.PUT, revision, key, value))
    gang = [pod for pod in cache.pods.values() if pod.name.startswith("gang-000000-")]
    assert len(gang) == 10 and all(pod.annotations is gang[0].annotations for pod in gang)
    assert set(gang[0].annotations) == {GROUP_NAME_ANNOTATION, TASK_SPEC_KEY}

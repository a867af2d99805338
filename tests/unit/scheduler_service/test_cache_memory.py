"""Memory per pod in the scheduler's cache: at the seeds' scale (1,000,000 pods) every process must hold
a pod in a few KB, where the pod's stored JSON alone is about 1.7 KB."""

from __future__ import annotations

from tests.support.memory import retained_bytes
from tests.unit.bench.bench_pods import running_gang_pods
from vc_bus.kvwatch import RawEntry
from vc_core.store import WatchOp
from vc_scheduler.cache import SchedulerCache

PODS = 10_000
# What the cache and its cluster index hold per Running pod of the gang benchmark. Measured: 1.45 KB
# (the decoded view, its labels and annotations with shared text, one requests dict and one empty node
# selector for the pods that ask alike, the index's entry with its PodGroup key and its requests'
# amounts shared); 2.3 KB with those dicts and keys per pod, 3.2 KB with a copy of every repeated string
# per pod as well.
MAX_BYTES_PER_POD = 1_750


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

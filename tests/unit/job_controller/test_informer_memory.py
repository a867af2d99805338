"""Memory per pod in the job controller's pod informer: at the seeds' scale (1,000,000 pods) every process
must hold a pod in a few KB, where the pod's stored JSON alone is about 1.7 KB."""

from __future__ import annotations

from tests.support.memory import retained_bytes
from tests.unit.bench.bench_pods import running_gang_pods
from vc_bus.store import decode_stored
from vc_bus.testing import MemoryStore
from vc_core.store import WatchEvent, WatchOp
from vc_job_controller.controller import JobController
from vc_proto import subjects
from vc_runtime.sharding import SoleOwner

PODS = 10_000
# What the informer and the controller's pods-by-job index hold per Running pod of the gang benchmark.
# Measured: 1.25 KB (the fields the controller reads, with what pods repeat shared); the whole decoded
# pod would take 6.1 KB.
MAX_BYTES_PER_POD = 1_700


async def _no_history(events: object) -> int:
    return 0


def test_a_running_pod_costs_the_informer_at_most_its_bound() -> None:
    stored = running_gang_pods(PODS, nodes=1_000)
    controller = JobController(MemoryStore(), _no_history, SoleOwner(), source="test")  # type: ignore[arg-type]

    def fill() -> int:
        for revision, (key, value) in enumerate(stored, start=1):
            # Decoded here, as the store's watch decodes each entry: what the cache keeps of it counts.
            pod = decode_stored("Pod", key, value, revision)
            namespace, name = subjects.split_key(key)
            controller.pods.apply(WatchEvent(WatchOp.PUT, revision, namespace, name, pod))
        controller.pending.clear()  # the requests the changes raised: work, not cache
        return len(controller.pods.items)

    cached, retained = retained_bytes(fill)

    assert cached == PODS and sum(len(pods) for pods in controller.pods_by_job.values()) == PODS
    assert retained / PODS <= MAX_BYTES_PER_POD, f"{retained / PODS:.0f} bytes per pod"

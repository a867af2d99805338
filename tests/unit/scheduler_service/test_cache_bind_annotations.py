"""A bind's own annotations (deviceshare's GPU assignment) ride on the assumed pod, so the next cycle
counts the pod's GPUs before the watch shows the stored bind; the stored bind then confirms it."""

from __future__ import annotations

import json

from vc_scheduler.cache import BOUND_BY, SchedulerCache

GPUS = {"volcano.sh/vgpu-ids-new": "GPU-0,NVIDIA,4000,0:", "volcano.sh/vgpu-node": "n1"}


def test_an_assumed_bind_carries_its_annotations_and_the_stored_bind_confirms_it() -> None:
    cache = SchedulerCache()
    pod = {
        "kind": "Pod",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u", "annotations": {"scheduling.k8s.io/group-name": "g"}},
        "spec": {"schedulerName": "volcano", "containers": [{"resources": {"limits": {"volcano.sh/vgpu-number": 1}}}]},
    }
    assert cache._put("Pod", "ns/a", json.dumps(pod).encode(), cache.pods)
    cache.assume("ns/a", "n1", GPUS)
    assumed = cache.pods["ns/a"]
    assert assumed.node_name == "n1" and assumed.annotations["volcano.sh/vgpu-ids-new"] == "GPU-0,NVIDIA,4000,0:"
    assert assumed.annotations["scheduling.k8s.io/group-name"] == "g"
    stored = {
        **pod,
        "metadata": {**pod["metadata"], "annotations": {**pod["metadata"]["annotations"], **GPUS, BOUND_BY: "s0/1"}},  # type: ignore[dict-item]
        "spec": {**pod["spec"], "nodeName": "n1"},  # type: ignore[dict-item]
    }
    assert not cache._put("Pod", "ns/a", json.dumps(stored).encode(), cache.pods)  # nothing a cycle reads changed
    assert cache.pods["ns/a"] is assumed and cache.assumed() == frozenset()

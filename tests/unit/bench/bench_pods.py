"""Pods as the gang benchmark leaves them in the store (benchmarks/e2e_gang_load.py): created by the job
controller from the benchmark's vcjob, bound by the scheduler, Running as node-sim reports them.

For memory tests of the caches that hold every pod: the bytes are what a store watch delivers."""

from __future__ import annotations

import msgspec

from benchmarks.e2e_gang_load import GANG, vcjob
from vc_bus.objects import stamp_new, storage_key, with_meta
from vc_job_controller.logic.pods import build_job_pod
from vc_node_sim.statuses import running_status
from vc_proto import codec
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_scheduler.cache import BOUND_BY

CREATED = "2026-01-05T10:00:00Z"


def running_gang_pods(count: int, *, nodes: int) -> list[tuple[str, bytes]]:
    """`count` pods of gangs of GANG, spread over `nodes` nodes: (store key, stored JSON) each."""
    return [(key, running) for key, (_, _, running) in gang_pod_lives(count, nodes=nodes)]


def gang_pod_lives(count: int, *, nodes: int) -> list[tuple[str, tuple[bytes, bytes, bytes]]]:
    """The same pods, each as the store holds it in turn: created (pending), bound, Running."""
    pods: list[tuple[str, tuple[bytes, bytes, bytes]]] = []
    for j in range(count // GANG):
        job = codec.from_dict(vcjob(f"gang-{j:06d}"))
        assert isinstance(job, Job) and job.spec and job.spec.tasks
        task = job.spec.tasks[0]
        job = with_meta(job, uid=f"00000000-0000-4000-8000-{j:012d}")
        for index in range(GANG):
            created = stamp_new(build_job_pod(job, task, index), now=CREATED)
            bound = _bound(created, node=f"node-{len(pods) % nodes:05d}")
            # Started within the second a whole gang is bound in (a second per 200 pods).
            started = f"2026-01-05T10:{len(pods) // 200 // 60 % 60:02d}:{len(pods) // 200 % 60:02d}Z"
            running = msgspec.structs.replace(bound, status=running_status(bound, now=started, host_ip="10.0.0.1"))
            versions = (codec.encode(created), codec.encode(bound), codec.encode(running))
            pods.append((storage_key(created), versions))
    return pods


def _bound(pod: Pod, *, node: str) -> Pod:
    assert pod.spec is not None
    annotations = {**(pod.metadata.annotations or {}), BOUND_BY: "scheduler-0/1"}
    pod = msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
    return with_meta(pod, annotations=annotations)

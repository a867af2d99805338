"""Which pods get a PodGroup from this controller, and under which name (Volcano pg controller)."""

from __future__ import annotations

from vc_proto.core import Pod
from vc_proto.pod_shards import default_group
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION, PodPhase

FINISHED = (PodPhase.SUCCEEDED, PodPhase.FAILED)


def group_name(pod: Pod) -> str:
    """`podgroup-<owner uid>`: every pod of one workload shares a group; a bare pod gets its own. The
    pod is stored in this group's shard from its creation on (vc_proto.pod_shards), so it is that name."""
    return default_group(pod)


def wants_podgroup(pod: Pod, scheduler_names: frozenset[str]) -> bool:
    """A live pod for a Volcano scheduler that names no group yet (a vcjob's pods always name one)."""
    if pod.spec is None or pod.spec.scheduler_name not in scheduler_names:
        return False
    if GROUP_NAME_ANNOTATION in (pod.metadata.annotations or {}):
        return False
    if pod.metadata.deletion_timestamp is not None or not pod.metadata.uid:
        return False
    phase = pod.status.phase if pod.status else None
    return phase not in FINISHED

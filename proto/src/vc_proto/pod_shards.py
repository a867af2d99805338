"""The shard a pod is stored under: its PodGroup's, known when the pod is created and never moved.

Pods are kept under `<namespace>.<shard>.<name>` (vc_proto.subjects.pod_key) so that a reader can be
sent the pods of some PodGroups only (a scheduler instance, its share: docs/scale-out.md) with a
consumer filtered on the shards it wants. The shard is a fixed hash of `namespace/group`, so every
pod of a PodGroup is in one shard, and a key by group is written once: a key by node would move with
every bind.

A pod's group is its `scheduling.k8s.io/group-name` annotation, or else the name the podgroup
controller will give it (`podgroup-<controlling owner's uid, or the pod's own>`): the same either way,
since that controller writes exactly that name into the annotation. A write that would change it
later is refused (vc_bus.store): a pod never changes PodGroup.
"""

from __future__ import annotations

import zlib
from typing import Final

from vc_proto.core import Pod
from vc_proto.meta import OwnerReference
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION

SHARDS: Final = 64
DEFAULT_GROUP_PREFIX: Final = "podgroup-"


def controller_ref(pod: Pod) -> OwnerReference | None:
    """The pod's managing owner (ReplicaSet, StatefulSet, Job...), if any."""
    return next((ref for ref in pod.metadata.owner_references or () if ref.controller), None)


def default_group(pod: Pod) -> str:
    """`podgroup-<owner uid>`: the group the podgroup controller makes for a pod that names none; every
    pod of one workload (its controlling owner) shares it, a bare pod gets one of its own."""
    owner = controller_ref(pod)
    return DEFAULT_GROUP_PREFIX + (owner.uid if owner is not None else pod.metadata.uid or "")


def group_of(pod: Pod) -> str:
    """The PodGroup the pod belongs to, or will once the podgroup controller has made it."""
    return (pod.metadata.annotations or {}).get(GROUP_NAME_ANNOTATION) or default_group(pod)


def shard_of_group(namespace: str, group: str) -> int:
    """A stable hash (the same in every process and release: not Python's `hash`) into SHARDS."""
    return zlib.crc32(f"{namespace}/{group}".encode()) % SHARDS


def shard_of(pod: Pod) -> int:
    return shard_of_group(pod.metadata.namespace or "", group_of(pod))


def shard_of_key(key: str) -> int:
    """The shard of a PodGroup by its key, `<namespace>/<name>` (shard_of_group)."""
    return zlib.crc32(key.encode()) % SHARDS

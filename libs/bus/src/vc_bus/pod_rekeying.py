"""Pods a store kept under the keys of releases before they were sharded, moved under their shard's.

Earlier releases kept a pod under `<namespace>.<name>`; it is now under `<namespace>.<shard>.<name>`
(vc_proto.pod_shards), and nobody reads the old keys. The embedded backend's admission service moves
them once at its start, before it serves: each pod is written under its new key (unless its name is
held there already, by a pod written since or by another mover) and then deleted from its old key only
if that is unchanged since it was read. Running it again, or from two processes at once, is harmless.
With `--backend kube` the relay's first pass does the same (the old keys are not in what it lists).
"""

from __future__ import annotations

import structlog
from nats.js.client import JetStreamContext
from nats.js.errors import APIError, KeyWrongLastSequenceError

from vc_bus.buckets import Bucket, open_bucket
from vc_bus.decoding import UNDECODABLE
from vc_bus.kvwatch import watch_bucket
from vc_bus.objects import storage_key
from vc_core.store import WatchOp
from vc_proto import codec, subjects
from vc_proto.core import Pod

log = structlog.get_logger(__name__)

OLD_KEYS = "*.*"  # exactly two tokens: a pod's key now has three


async def rekey_pods(js: JetStreamContext, *, replicas: int = 1) -> int:
    """Move every pod under an old key; returns how many were moved."""
    name = subjects.bucket("Pod")
    bucket = await open_bucket(js, name, replicas=replicas)
    moved = 0
    async for entry in watch_bucket(js, name, OLD_KEYS):
        if entry.op is WatchOp.SYNCED:
            break
        if entry.op is WatchOp.PUT:
            moved += await _move(bucket, entry.key, entry.value, entry.revision)
    if moved:
        log.info("store.pods_rekeyed", pods=moved)
    return moved


async def _move(bucket: Bucket, old_key: str, value: bytes, revision: int) -> int:
    try:
        pod = codec.decode_object(value)
    except UNDECODABLE:
        pod = None
    namespace, name = subjects.split_key(old_key)
    if not isinstance(pod, Pod) or (pod.metadata.namespace, pod.metadata.name) != (namespace, name):
        log.warning("store.rekey_skipped", key=old_key, reason="not the pod its key names")
        return 0
    try:
        await bucket.create_alone(storage_key(pod), value, subjects.pod_name_filter(namespace or "", name))
    except KeyWrongLastSequenceError:
        pass  # its name is held under a new key already: that is the pod now
    try:
        await bucket.delete(old_key, last=revision)
    except APIError as exc:  # changed since it was read: a writer of the old release, moved next time
        log.warning("store.rekey_raced", key=old_key, error=str(exc))
        return 0
    return 1

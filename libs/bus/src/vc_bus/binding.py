"""Pure rules of the store port's `bind`, shared by every adapter (NATS KV, the in-memory fake, kube).

A pod is bound when, at the moment of the write, the pod stored under its name has the caller's uid, is
not being deleted and has no node yet: the fence Kubernetes' pods/binding subresource gives. The
caller's resourceVersion is not part of it (an unrelated write in between, e.g. a label, must not fail
the bind), so an adapter re-checks these rules on the stored pod whenever its own write was refused.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from vc_core.errors import Conflict, InvalidObject, PreconditionFailed
from vc_proto.core import Pod, PodSpec


def display(pod: Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def required_uid(pod: Pod) -> str:
    """The uid a bind is fenced on; a pod copy without one cannot be bound (it names no instance)."""
    if not pod.metadata.uid:
        raise InvalidObject("metadata.uid", "required", f"binding pod {display(pod)} needs its uid")
    return pod.metadata.uid


def refuse_unbindable(current: Pod, uid: str) -> None:
    """Raise why `current` (the stored pod, or the newest copy known) may not be bound for `uid`."""
    revision = int(current.metadata.resource_version or 0) or None
    if current.metadata.uid != uid:
        raise PreconditionFailed("Pod", display(current), expected=revision)
    if current.metadata.deletion_timestamp is not None or (current.spec is not None and current.spec.node_name):
        raise Conflict("Pod", display(current), expected=revision)


def bound_pod(current: Pod, uid: str, node: str, annotations: Mapping[str, str] | None) -> Pod:
    """`current` bound to `node` with `annotations` merged in, as the apiserver writes a Binding."""
    refuse_unbindable(current, uid)
    spec = msgspec.structs.replace(current.spec or PodSpec(), node_name=node)
    meta = current.metadata
    if annotations:
        meta = msgspec.structs.replace(meta, annotations={**(meta.annotations or {}), **annotations})
    return msgspec.structs.replace(current, spec=spec, metadata=meta)

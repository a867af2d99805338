"""Watch selections: which stored objects a reader acts on, decided from their JSON before decoding.

A service that acts on a few of a kind's objects would otherwise decode every change of every object,
the largest part of its CPU under load: node-sim acts on the pods bound to its nodes, the podgroup
controller on pods that name no group, the job controller on the pods of vcjobs (on a shared cluster
most pods are someone else's). A selector reads only the few fields it needs (msgspec skips the rest
without building anything), so a refused change costs a scan of its bytes instead of a full decode.

A selector decides on the JSON form every store keeps (Kubernetes' field names), so one definition
serves every backend (see ObjectStore.watch). Bytes it cannot read are let through: the full decode
then reports them as it reports any undecodable value.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import msgspec

from vc_proto.batch import BATCH_V1ALPHA1
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION, JOB_NAME_KEY, JOB_VERSION_KEY, TASK_SPEC_KEY

Selector = Callable[[bytes], bool]


class _OwnerRef(msgspec.Struct, rename="camel"):
    api_version: str | None = None
    kind: str | None = None
    controller: bool | None = None


class _Meta(msgspec.Struct, rename="camel"):
    annotations: dict[str, str] | None = None
    owner_references: list[_OwnerRef] | None = None


class _PodSpec(msgspec.Struct, rename="camel"):
    node_name: str | None = None
    scheduler_name: str | None = None


class _PodHead(msgspec.Struct):
    metadata: _Meta | None = None
    spec: _PodSpec | None = None


_pod_head = msgspec.json.Decoder(_PodHead)


def _head(data: bytes) -> _PodHead | None:
    """The few fields, or None for bytes that are not a pod's JSON. Skipping an unknown field recurses
    into it: a deeply nested one raises RecursionError, which must not escape into the watch (its
    consumer would retry the same entry forever)."""
    try:
        return _pod_head.decode(data)
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        return None


def pods_bound_to(nodes: Collection[str]) -> Selector:
    """Pods bound to one of `nodes`, read at each call (a node registered later counts from then on)."""

    def select(data: bytes) -> bool:
        head = _head(data)
        if head is None:
            return True
        return head.spec is not None and head.spec.node_name is not None and head.spec.node_name in nodes

    return select


def pods_naming_no_group(scheduler_names: Collection[str]) -> Selector:
    """Pods for one of `scheduler_names` whose annotations name no PodGroup (every other pod already has
    its group, or is not Volcano's)."""

    def select(data: bytes) -> bool:
        head = _head(data)
        if head is None:
            return True
        if head.spec is None or head.spec.scheduler_name not in scheduler_names:
            return False
        annotations = head.metadata.annotations if head.metadata is not None else None
        return not annotations or GROUP_NAME_ANNOTATION not in annotations

    return select


_VCJOB_ANNOTATIONS = (JOB_NAME_KEY, JOB_VERSION_KEY, TASK_SPEC_KEY)


def pods_of_vcjobs(data: bytes) -> bool:
    """Pods a vcjob controls: its annotations name the job, version and task, and their controller is a
    batch.volcano.sh/v1alpha1 Job (what the job controller creates and acts on)."""
    head = _head(data)
    if head is None:
        return True
    meta = head.metadata
    if meta is None or not meta.annotations or not all(k in meta.annotations for k in _VCJOB_ANNOTATIONS):
        return False
    return any(
        ref.controller and ref.kind == "Job" and ref.api_version == BATCH_V1ALPHA1
        for ref in meta.owner_references or ()
    )

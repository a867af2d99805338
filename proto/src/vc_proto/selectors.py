"""Watch selections: which stored objects a reader acts on, decided from their JSON before decoding.

A service that acts on a few of a kind's objects would otherwise decode every change of every object,
the largest part of its CPU under load: node-sim acts on the pods bound to its nodes, the podgroup
controller on pods that name no group, the job controller on the pods of vcjobs (on a shared cluster
most pods are someone else's). A selector reads only the few fields it needs (msgspec skips the rest
without building anything), so a refused change costs a scan of its bytes instead of a full decode.

A selector decides on the JSON form every store keeps (Kubernetes' field names), so one definition
serves every backend (see ObjectStore.watch). It refuses only values that are plainly pods (their kind
and name are there): anything else (not JSON, nested deeper than the decoder goes, another kind, no
name) goes on to the full decode, which reports it as it reports any undecodable value. A selector never
sees the key, so a pod stored under another pod's key is judged by its content, like any other.

Why on content and not on subjects: a subject filter can only test what the key says, and what these
readers select on changes during a pod's life (its node is set at the bind, its group by the podgroup
controller). A key carrying either would move, and a move is a second write (the new key, and a delete
marker under the old one that every reader of the old subject must see) on top of the bind or the
annotation, where a refused delivery costs a reader a scan of the bytes: 14-23 us of CPU against a write's
107-232 us (`benchmarks/delivery_cost.py`; the runs are in docs/benchmarks.md). The other tokens a key
could carry for good (a pod's owner kind) would change the `<namespace>.<name>` key every store, the kube
relay's mirror and every reader by name rely on, to save the job and podgroup controllers a few scans each.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import msgspec

from vc_proto.batch import BATCH_V1ALPHA1
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION

Selector = Callable[[bytes], bool]


class _OwnerRef(msgspec.Struct, rename="camel"):
    api_version: str | None = None
    kind: str | None = None
    controller: bool | None = None


class _Meta(msgspec.Struct, rename="camel"):
    name: str | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[_OwnerRef] | None = None


class _PodSpec(msgspec.Struct, rename="camel"):
    node_name: str | None = None
    scheduler_name: str | None = None


class _PodHead(msgspec.Struct):
    kind: str | None = None
    metadata: _Meta | None = None
    spec: _PodSpec | None = None


_pod_head = msgspec.json.Decoder(_PodHead)


def _head(data: bytes) -> _PodHead | None:
    """The few fields of a pod, or None when the bytes are not plainly a pod (see the module docstring).
    Skipping an unknown field recurses into it: a deeply nested one raises RecursionError here."""
    try:
        head = _pod_head.decode(data)
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        return None
    if head.kind != "Pod" or head.metadata is None or not head.metadata.name:
        return None
    return head


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


def pods_of_vcjobs(data: bytes) -> bool:
    """Pods whose controller is a batch.volcano.sh/v1alpha1 Job. The job controller also asks for the
    job's annotations (owning_job); they are left to it, so that a pod whose annotations someone edits
    stays a change it ignores, as it always was, instead of seeming deleted (which is an eviction)."""
    head = _head(data)
    if head is None:
        return True
    assert head.metadata is not None  # _head answers only for pods with metadata
    return any(
        ref.controller and ref.kind == "Job" and ref.api_version == BATCH_V1ALPHA1
        for ref in head.metadata.owner_references or ()
    )

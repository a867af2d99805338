"""What node-sim keeps of each pod on its nodes: the fields `plan()` and its events read. Pure.

A kept pod is still a `Pod`, with its identity, labels, annotations (the simulated run time and exit
code), deletion mark, node and tolerations, and its phase and start time; the text pods repeat is
shared, and so are equal specs and statuses (vc_core.interning). What a pod asks of its node is kept
beside it (kubelet.py), worked out from the whole pod. Before a write node-sim reads the stored pod
and makes the write from that (kubelet.Kubelet._stored), so nothing left out here is lost.
"""

from __future__ import annotations

from fractions import Fraction

from vc_core.interning import SharedParts, shared, shared_or_none, shared_strings
from vc_core.resources import Resources
from vc_proto.core import Pod, PodSpec, PodStatus
from vc_proto.meta import ObjectMeta

_SPECS: SharedParts[tuple[object, ...], PodSpec] = SharedParts()
_STATUSES: SharedParts[tuple[str | None, str | None], PodStatus] = SharedParts()
_REQUESTS: SharedParts[tuple[tuple[str, Fraction], ...], Resources] = SharedParts()


def cached_pod(pod: Pod) -> Pod:
    return Pod(
        api_version=shared(pod.api_version),
        metadata=_metadata(pod.metadata),
        spec=_spec(pod.spec) if pod.spec else None,
        status=_status(pod.status) if pod.status else None,
    )


def shared_requests(requests: Resources) -> Resources:
    """One dict for the pods that ask alike (read only: sums are made into new dicts)."""
    return _REQUESTS.one(tuple(sorted(requests.items())), lambda: requests)


def _metadata(meta: ObjectMeta) -> ObjectMeta:
    return ObjectMeta(
        name=meta.name,
        namespace=shared_or_none(meta.namespace),
        uid=meta.uid,
        resource_version=meta.resource_version,
        deletion_timestamp=meta.deletion_timestamp,
        deletion_grace_period_seconds=meta.deletion_grace_period_seconds,
        labels=None if meta.labels is None else shared_strings(meta.labels),
        annotations=None if meta.annotations is None else shared_strings(meta.annotations),
    )


def _spec(spec: PodSpec) -> PodSpec:
    tolerations = None if spec.tolerations is None else tuple(spec.tolerations)
    return _SPECS.one(
        (spec.node_name, tolerations),
        lambda: PodSpec(node_name=shared_or_none(spec.node_name), tolerations=spec.tolerations),
    )


def _status(status: PodStatus) -> PodStatus:
    return _STATUSES.one(
        (status.phase, status.start_time),
        lambda: PodStatus(phase=shared_or_none(status.phase), start_time=shared_or_none(status.start_time)),
    )

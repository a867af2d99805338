"""A pod template's resource-quota usage, as Kubernetes' quota evaluator counts it.

Volcano's PodGroup minResources is Σ of `GetPodQuotaUsage` (k8s `quotacore.PodUsageFunc`) over the
chosen pods, which is why the seed's PodGroup shows `count/pods`, `pods`, `cpu`, `requests.cpu` and
`limits.cpu`. Init containers count by their maximum, app containers by their sum, plus overhead.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Final

from vc_core.quantity import format_quantity
from vc_core.resources import Resources, add, maximum, parse_resources, scale
from vc_proto.base import ResourceList
from vc_proto.core import Container, PodSpec

REQUESTS_PREFIX: Final = "requests."
LIMITS_PREFIX: Final = "limits."
# (resource, whether the plain name is also counted from the request)
_COMPUTE: Final = (("cpu", True), ("memory", True), ("ephemeral-storage", True))
_BINARY_BASES: Final = frozenset({"memory", "ephemeral-storage"})


def _container_sum(containers: list[Container] | None, which: str) -> Resources:
    total: Resources = {}
    for container in containers or []:
        res = container.resources
        raw = (res.requests if which == "requests" else res.limits) if res else None
        total = add(total, parse_resources(raw, field=f"containers[{container.name}].resources.{which}"))
    return total


def _init_max(containers: list[Container] | None, which: str, floor: Resources) -> Resources:
    result = floor
    for container in containers or []:
        res = container.resources
        raw = (res.requests if which == "requests" else res.limits) if res else None
        result = maximum(result, parse_resources(raw))
    return result


def is_native(name: str) -> bool:
    """k8s IsNativeResource: no domain, or a kubernetes.io domain."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    return not is_native(name) and not name.startswith(REQUESTS_PREFIX)


def pod_quota_usage(spec: PodSpec) -> Resources:
    """Volcano's GetPodQuotaUsage for one pod built from `spec`."""
    overhead = parse_resources(spec.overhead)
    requests = add(_init_max(spec.init_containers, "requests", _container_sum(spec.containers, "requests")), overhead)
    limits = add(_init_max(spec.init_containers, "limits", _container_sum(spec.containers, "limits")), overhead)
    usage: Resources = {"count/pods": Fraction(1), "pods": Fraction(1)}
    for name, plain in _COMPUTE:
        if name in requests:
            usage[REQUESTS_PREFIX + name] = requests[name]
            if plain:
                usage[name] = requests[name]
        if name in limits:
            usage[LIMITS_PREFIX + name] = limits[name]
    for name, value in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = value
            usage[REQUESTS_PREFIX + name] = value
        elif is_extended(name):
            # Quota only knows `requests.<ext>`; Volcano copies it back under the plain name.
            usage[REQUESTS_PREFIX + name] = value
            usage[name] = value
    return usage


def times(usage: Mapping[str, Fraction], count: int) -> Resources:
    return scale(usage, count) if count > 0 else {}


def format_resource_list(res: Mapping[str, Fraction]) -> ResourceList:
    """Kubernetes text per resource, memory-like ones (also `requests.memory`...) with binary suffixes."""
    out: ResourceList = {}
    for name, value in sorted(res.items()):
        base = name.removeprefix(REQUESTS_PREFIX).removeprefix(LIMITS_PREFIX)
        binary = base in _BINARY_BASES or base.startswith("hugepages-")
        out[name] = format_quantity(value, binary=binary)
    return out

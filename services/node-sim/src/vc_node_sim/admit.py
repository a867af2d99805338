"""What the simulated kubelet checks before it starts a pod (the kubelet's admission), as pure functions.

A pod can reach a node without admission or the scheduler (anyone can write `spec.nodeName` into the
store), so before running it node-sim asks what a kubelet asks:

1. Is it a pod admission would accept? (`vc_validation.validate_pod`.) If not: reason `Invalid`.
2. Do its requests, plus those of the pods the node already runs, fit the node's allocatable, resource
   by resource, `pods` included? If not: reason `OutOf<resource>` (e.g. `OutOfnvidia.com/gpu`) and the
   kubelet's message, "Node didn't have enough resource: <name>, requested: R, used: U, capacity: C".

A rejected pod ends Failed with that reason and a message starting "Pod was rejected: ", as a kubelet
rejects it. Requests are the scheduler's: max(sum of containers, each init container) plus overhead,
a container's missing request defaulting to its limit, and one `pods` slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Final

from vc_core import pod_requests as kube_rule
from vc_core.errors import InvalidObject
from vc_core.quantity import format_quantity
from vc_core.resources import CPU, MEMORY, PODS, Resources, add, parse_resources, tolerance
from vc_proto.core import Pod
from vc_validation import summarize, validate_pod

INVALID: Final = "Invalid"
REJECTED: Final = "Pod was rejected: "
_FIRST: Final = (PODS, CPU, MEMORY)  # the kubelet's order; other resources follow by name


@dataclass(frozen=True, slots=True)
class Rejection:
    reason: str
    message: str


def pod_requests(pod: Pod) -> Resources:
    """What the pod takes from its node while it runs (unparsable amounts count as nothing: a running
    pod is accounted for as well as it can be; a new one is validated before this is asked)."""
    total = kube_rule.pod_requests(pod.spec, lenient=True)
    total[PODS] = Fraction(1)
    return total


def admit(pod: Pod, *, allocatable: Mapping[str, str], running: Iterable[Resources]) -> Rejection | None:
    """None when the node runs the pod; otherwise why not. `running`: requests of the node's other pods."""
    violations = validate_pod(pod)
    if violations:
        return Rejection(INVALID, REJECTED + summarize(violations))
    capacity = _parse(allocatable)
    used = add(*running)
    request = pod_requests(pod)
    for name in (*(n for n in _FIRST if n in request), *sorted(n for n in request if n not in _FIRST)):
        wanted, taken, have = request[name], used.get(name, Fraction(0)), capacity.get(name, Fraction(0))
        if wanted > 0 and taken + wanted > have + tolerance(name):
            shown = ", ".join(
                f"{label}: {_show(name, value)}"
                for label, value in (("requested", wanted), ("used", taken), ("capacity", have))
            )
            return Rejection(f"OutOf{name}", f"{REJECTED}Node didn't have enough resource: {name}, {shown}")
    return None


def _parse(raw: Mapping[str, str | int | float] | None) -> Resources:
    try:
        return parse_resources(raw)
    except InvalidObject:
        return {}


def _show(name: str, value: Fraction) -> str:
    return format_quantity(value, binary=name == MEMORY)

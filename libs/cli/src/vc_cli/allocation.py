"""What is allocated where, for `node list -o wide`, `queue list -o wide` and `node describe`.

A node's allocation is the requests of the pods bound to it and not finished (what kubectl describe
node calls "Allocated resources"); a queue's is its `status.allocated`, which the scheduler writes,
against its capability. Amounts print as people read them: cores, GiB, GPUs, with the share of the
node's allocatable in parentheses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final

from vc_core.quantity import format_quantity, parse_quantity
from vc_core.resources import CPU, GPU, MEMORY, PODS, Resources, add, maximum
from vc_proto.core import Container, Node, Pod
from vc_proto.scheduling import Queue

FINISHED: Final = frozenset({"Succeeded", "Failed"})
SHOWN: Final = (CPU, MEMORY, GPU)


def _amounts(raw: Mapping[str, object] | None) -> Resources:
    """Quantities that parse; one that does not is left out (a page shows what it can)."""
    out: Resources = {}
    for name, value in (raw or {}).items():
        try:
            out[name] = parse_quantity(str(value))
        except ValueError:
            continue
    return out


def _container(container: Container) -> Resources:
    resources = container.resources
    if resources is None:
        return {}
    return {**_amounts(resources.limits), **_amounts(resources.requests)}  # a missing request is the limit


def pod_requests(pod: Pod) -> Resources:
    """Σ containers, at least the largest init container, plus overhead (as the scheduler counts a pod)."""
    spec = pod.spec
    if spec is None:
        return {}
    total = add(*(_container(c) for c in spec.containers or ()))
    for init in spec.init_containers or ():
        total = maximum(total, _container(init))
    return add(total, _amounts(spec.overhead))


def holding_node(pod: Pod) -> str | None:
    """The node the pod holds a share of: bound and not finished."""
    node = pod.spec.node_name if pod.spec else None
    phase = (pod.status.phase if pod.status else None) or "Pending"
    return node if node and phase not in FINISHED else None


def pods_by_node(pods: Iterable[Pod]) -> dict[str, list[Pod]]:
    out: dict[str, list[Pod]] = {}
    for pod in pods:
        node = holding_node(pod)
        if node is not None:
            out.setdefault(node, []).append(pod)
    return out


def allocated(pods: Iterable[Pod]) -> Resources:
    return add(*(pod_requests(p) for p in pods))


def amount(name: str, value: Fraction) -> str:
    """`12`, `0.5`, `24Gi`: cores and GPUs as numbers, memory in binary units."""
    if name == MEMORY:
        return format_quantity(value, binary=True)
    return f"{float(value):g}" if value.denominator != 1 else str(value.numerator)


def share(name: str, used: Resources, total: Resources) -> str:
    """`12 (37%)` of the node's allocatable; just the amount when the node offers none."""
    value = used.get(name, Fraction(0))
    offered = total.get(name, Fraction(0))
    if not offered:
        return amount(name, value)
    return f"{amount(name, value)} ({int(value * 100 / offered)}%)"


def node_allocatable(node: Node) -> Resources:
    return _amounts(node.status.allocatable if node.status else None)


NODE_WIDE_HEADERS: Final = ["CPU Requests", "Memory Requests", "GPU Requests", "Pods Placed"]


def node_wide_row(node: Node, placed: Mapping[str, list[Pod]]) -> list[object]:
    pods = placed.get(node.metadata.name or "", [])
    used = {**allocated(pods), PODS: Fraction(len(pods))}
    total = node_allocatable(node)
    return [share(name, used, total) for name in (*SHOWN, PODS)]


QUEUE_WIDE_HEADERS: Final = ["CPU Allocated/Cap", "Memory Allocated/Cap", "GPU Allocated/Cap"]


def queue_wide_row(queue: Queue) -> list[object]:
    """Each resource as `allocated/capability` (`-` for no capability: the cluster is its limit)."""
    used = _amounts(queue.status.allocated if queue.status else None)
    cap = _amounts(queue.spec.capability if queue.spec else None)
    return [f"{amount(n, used.get(n, Fraction(0)))}/{amount(n, cap[n]) if n in cap else '-'}" for n in SHOWN]

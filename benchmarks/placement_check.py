"""Whether a load ended as gang scheduling promises: every gang whole (at least its minMember pods
Running) and no node holding more than its allocatable (each resource, and its pod slots), from the
Running pods as the store shows them at the end."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from vc_core.resources import Resources

PODS = "pods"


@dataclass(frozen=True, slots=True)
class RunningPod:
    gang: str  # the PodGroup's key
    node: str
    requests: Resources  # without the pod slot


@dataclass(slots=True)
class PlacementCheck:
    gangs: int = 0
    nodes: int = 0
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if not self.problems:
            return f"every gang whole ({self.gangs:,}), no node over its allocatable ({self.nodes:,} with pods)"
        shown = "; ".join(self.problems[:5])
        more = f" (and {len(self.problems) - 5:,} more)" if len(self.problems) > 5 else ""
        return f"BROKEN: {len(self.problems):,} problems: {shown}{more}"


def check_placement(
    running: Iterable[RunningPod], min_member: Mapping[str, int], allocatable: Mapping[str, Resources]
) -> PlacementCheck:
    """`min_member` by gang key (each gang of the load: one with no pod Running is not whole either);
    `allocatable` by node name, its `pods` slot included when the node has one."""
    per_gang: dict[str, int] = defaultdict(int)
    used: dict[str, dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for pod in running:
        per_gang[pod.gang] += 1
        slot = used[pod.node]
        for name, amount in pod.requests.items():
            slot[name] += amount
        slot[PODS] += 1
    check = PlacementCheck(gangs=len(min_member), nodes=len(used))
    for gang, wanted in sorted(min_member.items()):
        if per_gang.get(gang, 0) < wanted:
            check.problems.append(f"gang {gang}: {per_gang.get(gang, 0)} of {wanted} Running")
    for node, slot in sorted(used.items()):
        have = allocatable.get(node)
        if have is None:
            check.problems.append(f"node {node}: pods Running on a node the store does not have")
            continue
        for name, amount in sorted(slot.items()):
            if amount > have.get(name, Fraction(0)):
                check.problems.append(f"node {node}: {name} {float(amount):g} used of {float(have.get(name, 0)):g}")
    return check

"""What the queue controller derives from a queue's PodGroups: counts per phase, inqueue resources."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

from vc_core.errors import InvalidObject
from vc_core.resources import Resources, add, parse_resources
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import DEFAULT_QUEUE, PodGroupPhase


@dataclass(frozen=True, slots=True)
class PodGroupCounts:
    pending: int = 0
    inqueue: int = 0
    running: int = 0
    unknown: int = 0
    completed: int = 0


def queue_of(podgroup: PodGroup) -> str:
    """The queue a PodGroup belongs to; an empty queue is the CRD default `default`."""
    spec = podgroup.spec
    return (spec.queue if spec else None) or DEFAULT_QUEUE


def phase_of(podgroup: PodGroup) -> str:
    return (podgroup.status.phase if podgroup.status else None) or ""


def count_phases(podgroups: Iterable[PodGroup]) -> PodGroupCounts:
    """Volcano's syncQueue tally; a PodGroup without a phase counts nowhere (it is not yet Pending)."""
    tally = {phase: 0 for phase in PodGroupPhase}
    for podgroup in podgroups:
        phase = phase_of(podgroup)
        if phase in tally:
            tally[PodGroupPhase(phase)] += 1
    return PodGroupCounts(
        pending=tally[PodGroupPhase.PENDING],
        inqueue=tally[PodGroupPhase.INQUEUE],
        running=tally[PodGroupPhase.RUNNING],
        unknown=tally[PodGroupPhase.UNKNOWN],
        completed=tally[PodGroupPhase.COMPLETED],
    )


def inqueue_resources(podgroups: Iterable[PodGroup]) -> Resources:
    """Σ minResources of the Inqueue PodGroups: what admission (enqueue) has promised but not yet bound.

    This is the figure Volcano's proportion and capacity plugins compare against the queue's
    capability when they enqueue (users asked to see it, Volcano issue 5242).
    """
    total: Resources = {}
    for podgroup in podgroups:
        if phase_of(podgroup) != PodGroupPhase.INQUEUE or podgroup.spec is None:
            continue
        total = add(total, _min_resources(podgroup))
    return total


def _min_resources(podgroup: PodGroup) -> dict[str, Fraction]:
    try:
        return parse_resources(podgroup.spec.min_resources if podgroup.spec else None)
    except InvalidObject:  # admission validates quantities; a bad one counts as nothing here
        return {}

"""A queue's PodGroup figures, kept up to date one PodGroup change at a time. Pure.

The status a queue pass writes needs its PodGroups counted per phase and the minResources of its
Inqueue ones summed (`status.count_phases`, `status.inqueue_resources`). Recomputing both over every
PodGroup of the queue on every pass cost a third of the controller's CPU (1,000 PodGroups, Fraction
arithmetic), so the caches add and remove each PodGroup's share as it changes instead.

Sums are integers of nano-units (the finest Kubernetes suffix, `n`), exact for every quantity written
with a suffix or up to nine decimals; a quantity finer than that (`1e-12`) is summed as a Fraction on
the side, so the result is always exactly what the full recomputation gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Final

from vc_core.errors import InvalidObject
from vc_core.quantity import parse_quantity
from vc_core.resources import Resources
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import PodGroupPhase
from vc_queue_controller.logic.status import PodGroupCounts, phase_of

NANO: Final = 10**9
_UNITS_CACHE_MAX: Final = 65_536
# A quantity's text -> its nano-units (an int), or its exact value when it is finer than nano.
_units: dict[str | int | float, int | Fraction] = {}


class QueueTally:
    def __init__(self) -> None:
        self.members = 0
        self._phases: dict[str, int] = {}
        self._nanos: dict[str, int] = {}
        self._finer: dict[str, Fraction] = {}
        self._named: dict[str, int] = {}  # how many Inqueue PodGroups name each resource (a sum of 0 shows)

    @classmethod
    def of(cls, podgroups: Iterable[PodGroup]) -> QueueTally:
        tally = cls()
        for podgroup in podgroups:
            tally.add(podgroup)
        return tally

    def add(self, podgroup: PodGroup) -> None:
        self._apply(podgroup, +1)

    def remove(self, podgroup: PodGroup) -> None:
        """Take back what `add` of this same PodGroup (the version that was added) counted."""
        self._apply(podgroup, -1)

    def counts(self) -> PodGroupCounts:
        """What `status.count_phases` gives for the PodGroups in the tally."""
        get = self._phases.get
        return PodGroupCounts(
            pending=get(PodGroupPhase.PENDING, 0),
            inqueue=get(PodGroupPhase.INQUEUE, 0),
            running=get(PodGroupPhase.RUNNING, 0),
            unknown=get(PodGroupPhase.UNKNOWN, 0),
            completed=get(PodGroupPhase.COMPLETED, 0),
        )

    def inqueue(self) -> Resources:
        """What `status.inqueue_resources` gives for the PodGroups in the tally."""
        return {
            name: Fraction(self._nanos.get(name, 0), NANO) + self._finer.get(name, Fraction(0))
            for name, count in self._named.items()
            if count
        }

    def _apply(self, podgroup: PodGroup, sign: int) -> None:
        self.members += sign
        phase = phase_of(podgroup)
        if phase in _PHASES:
            self._phases[phase] = self._phases.get(phase, 0) + sign
        if phase != PodGroupPhase.INQUEUE or podgroup.spec is None:
            return
        amounts = _amounts(podgroup.spec.min_resources)
        if amounts is None:
            return  # admission validates quantities; a bad one counts as nothing (as inqueue_resources)
        for name, value in amounts.items():
            self._named[name] = self._named.get(name, 0) + sign
            if isinstance(value, int):
                self._nanos[name] = self._nanos.get(name, 0) + sign * value
            else:
                self._finer[name] = self._finer.get(name, Fraction(0)) + sign * value


_PHASES: Final = frozenset(PodGroupPhase)


def _amounts(raw: Mapping[str, str | int | float] | None) -> dict[str, int | Fraction] | None:
    """Each resource in nano-units (or exactly, when finer); None when any quantity does not parse."""
    if not raw:
        return {}
    out: dict[str, int | Fraction] = {}
    for name, text in raw.items():
        units = _units.get(text) if text.__class__ is str else None
        if units is None:
            try:
                value = parse_quantity(text, field=f"minResources.{name}")
            except InvalidObject:
                return None
            scaled = value * NANO
            units = scaled.numerator if scaled.denominator == 1 else value
            if text.__class__ is str and len(_units) < _UNITS_CACHE_MAX:
                _units[text] = units
        out[name] = units
    return out

"""Why a task fits no node: Volcano's FitErrors histogram, plus the numbers a user can act on."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Final

# A refusal that waiting never clears: no node carries the labels the pod asks for.
NODE_SELECTOR_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"


@dataclass(slots=True)
class FitErrors:
    """`nodes` failed nodes; `reasons` counts each reason over them (a node may give several)."""

    nodes: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    # resource name -> (requested per task, most free on any node that passed the other predicates),
    # in the session's units; a resource whose best node has enough blocks nothing by itself
    shortfalls: dict[str, tuple[float, float]] = field(default_factory=dict)
    message: str = ""  # set instead of the histogram when the failure is not per node

    def error(self) -> str:
        """Volcano's FitErrors.Error(): `0/<n> nodes are unavailable: <sorted '<count> <reason>'>.`"""
        if self.message:
            return self.message
        head = f"0/{self.nodes} nodes are unavailable"
        if not self.reasons:
            return head
        histogram = sorted(f"{count} {reason}" for reason, count in self.reasons.items())
        return f"{head}: {', '.join(histogram)}."


def insufficient(name: str) -> str:
    return f"Insufficient {name}"

"""Whether a load's rate holds to its end: pods/s over its first and its last stretch of pods, and the
longest time with no new pod Running (a stall), from the moments each pod was first seen Running. The
stalls of the binds next to those of the pods Running say which side of the bind held the pods back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

WINDOW = 100_000  # pods in the first and the last stretch, on a load of at least twice as many


@dataclass(frozen=True, slots=True)
class Pacing:
    window: int  # pods in each stretch
    first_rate: float  # pods/s over the first `window` pods, from the start
    last_rate: float  # pods/s over the last `window` pods
    longest_gap_s: float  # the longest time between two pods becoming Running, the first one included
    gap_ended_at_pod: int  # how many pods were Running when it ended (its end: that pod Running)
    gap_ended_at_s: float  # when it ended, seconds from the start

    def describe(self) -> str:
        ratio = self.last_rate / self.first_rate if self.first_rate else float("nan")
        return (
            f"first {self.window:,} pods {self.first_rate:,.0f} pods/s, last {self.window:,} {self.last_rate:,.0f} "
            f"({ratio:.2f}x); longest time with no new pod Running {self.longest_gap_s:.1f}s "
            f"(ended at {self.gap_ended_at_s:.0f}s, pod {self.gap_ended_at_pod:,})"
        )


def pacing(running_at: Sequence[float], start: float) -> Pacing | None:
    """`running_at`: when each pod became Running, in order; `start`: the first submit. None without pods.
    The stretches are WINDOW pods, or a tenth of a smaller load."""
    if not running_at:
        return None
    total = len(running_at)
    window = WINDOW if total >= 2 * WINDOW else max(1, total // 10)
    first_s = running_at[window - 1] - start
    last_from = running_at[total - window - 1] if total > window else start
    last_s = running_at[-1] - last_from
    gaps = [running_at[0] - start] + [b - a for a, b in pairwise(running_at)]
    longest = max(range(total), key=gaps.__getitem__)
    return Pacing(
        window,
        window / first_s if first_s > 0 else float("inf"),
        window / last_s if last_s > 0 else float("inf"),
        gaps[longest],
        longest + 1,
        running_at[longest] - start,
    )


def stalls(times: Sequence[float], start: float, *, over_s: float) -> list[tuple[float, float]]:
    """Every time longer than `over_s` with nothing new in `times` (moments in order, from the first
    submit at `start`): (when it ended, seconds from the start; how long it lasted), in order."""
    moments = [start, *times]
    return [(b - start, b - a) for a, b in pairwise(moments) if b - a > over_s]


def describe_stalls(found: Sequence[tuple[float, float]]) -> str:
    return ", ".join(f"{length:.1f}s ending at {ended:.0f}s" for ended, length in found) or "none"

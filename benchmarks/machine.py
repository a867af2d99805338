"""How fast this machine's CPU is at the moment of a run: the CPU time of a fixed pure-Python workload.

The shared 2-core machines this project is measured on do not run at one speed: the same deterministic
work (a scheduling session over the same cluster, or a plain Python loop) took from 1.0x to 1.6x the CPU
time from one minute to the next, with nothing else running and no steal time reported (docs/benchmarks.md).
An absolute figure alone therefore says little across runs; printed beside the reference below (the
least CPU time of a few repetitions, taken right before and after the measured work), it can be read as
"so many references" and compared with a run on a faster or slower minute.

The workload is the kind of Python the scheduler runs (dict look-ups and updates, small tuples,
attribute-free integer arithmetic); it must never change, or the references of older runs stop meaning
the same thing: `CHECKSUM` pins it (tests/unit/bench/test_machine.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

ROUNDS: Final = 200_000
CHECKSUM: Final = 813_726_848


def workload(rounds: int = ROUNDS) -> int:
    """The fixed work; its result is a checksum of it (the same on every machine)."""
    table: dict[int, tuple[int, int]] = {}
    total = 0
    for i in range(rounds):
        key = (i * 7919) % 4096
        held = table.get(key)
        if held is None:
            table[key] = (i, 1)
        else:
            table[key] = (held[0] + i, held[1] + 1)
        total += key ^ (i & 1023)
    for first, count in table.values():
        total += first // count
    return total


def reference_seconds(repeats: int = 5) -> float:
    """The least CPU seconds of `repeats` runs of the workload (the least: the machine's speed, not its
    interruptions)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        workload()
        best = min(best, time.process_time() - started)
    return best


@dataclass(frozen=True, slots=True)
class Speed:
    """The reference before and after a measured phase, in milliseconds."""

    before_ms: float
    after_ms: float

    @property
    def mean_ms(self) -> float:
        return (self.before_ms + self.after_ms) / 2

    def in_references(self, cpu_seconds: float) -> float:
        """`cpu_seconds` of work as a number of references (the machine's speed taken out)."""
        return 1000 * cpu_seconds / self.mean_ms

    def describe(self) -> str:
        return f"machine reference {self.before_ms:.0f} ms before, {self.after_ms:.0f} ms after (fixed workload)"

"""How much to fuzz, from which seed, and what came of it.

TEPHRA_FUZZ_EXAMPLES inputs per surface (a slice by default: `make fuzz` asks for 10,000), drawn from
TEPHRA_FUZZ_SEED. Inputs are drawn up front by hypothesis (seeded, generation only: no shrinking, no
example database), so a run is the same list of inputs every time and a failure names the input.
Each surface's tally is appended to TEPHRA_FUZZ_REPORT (JSON lines) when set; `python -m
tests.fuzz.report FILE` prints the table docs/reliability.md quotes.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

EXAMPLES: Final = int(os.environ.get("TEPHRA_FUZZ_EXAMPLES", "150"))
SEED: Final = int(os.environ.get("TEPHRA_FUZZ_SEED", "1"))
REPORT: Final = os.environ.get("TEPHRA_FUZZ_REPORT")
# Time a surface may take: drawing inputs costs ~15 ms each on a loaded 2-core machine, sending them less.
TIMEOUT_S: Final = 300 + EXAMPLES * 0.12

T = TypeVar("T")


def draw(strategy: st.SearchStrategy[T], count: int = EXAMPLES, at: int = SEED) -> list[T]:
    """`count` inputs from `strategy`, the same ones for the same seed."""
    out: list[T] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(at)
    @given(strategy)
    def collect(value: T) -> None:
        out.append(value)

    collect()
    return out


@dataclass
class Tally:
    """What one surface answered: outcomes by name, and the inputs that broke it (crashes)."""

    surface: str
    outcomes: Counter[str] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @property
    def inputs(self) -> int:
        return sum(self.outcomes.values())

    def add(self, outcome: str) -> None:
        self.outcomes[outcome] += 1

    def crash(self, what: str, payload: bytes | str) -> None:
        self.outcomes["crash"] += 1
        shown = payload if isinstance(payload, str) else payload[:300].decode("utf-8", "backslashreplace")
        self.crashes.append(f"{what}: input {shown[:300]!r}")

    def finish(self, expected: int) -> None:
        """Report, then fail on any crash or a missing answer."""
        line = {
            "surface": self.surface,
            "inputs": self.inputs,
            "crashes": len(self.crashes),
            "seed": SEED,
            "seconds": round(time.monotonic() - self.started, 1),
            "outcomes": dict(self.outcomes.most_common()),
        }
        print(json.dumps(line))
        if REPORT:
            with Path(REPORT).open("a") as out:
                out.write(json.dumps(line) + "\n")
        assert not self.crashes, f"{len(self.crashes)} crashes on {self.surface}:\n" + "\n".join(self.crashes[:20])
        assert self.inputs == expected, f"{self.surface}: {self.inputs} answered of {expected} sent"


def short(value: Any) -> str:
    return " ".join(str(value).split())[:200]

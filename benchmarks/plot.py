"""A line chart as a PNG: pods Running over time, one line per system measured (matplotlib, Agg).

Pure as far as callers see: data in, PNG bytes out (`line_chart`), so it is tested without files. The
Agg backend draws off screen (no display on CI machines); each chart uses its own Figure, not pyplot's
global state, so concurrent benchmarks cannot draw into each other's chart.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

Point = tuple[float, float]

WIDTH: Final = 960
HEIGHT: Final = 540
DPI: Final = 96
# matplotlib's default cycle (tab10), named so a test can look for each line's colour in the image.
PALETTE: Final[tuple[str, ...]] = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


@dataclass(frozen=True, slots=True)
class Line:
    label: str
    points: Sequence[Point] = field(default_factory=tuple)


def line_chart(
    lines: Sequence[Line], *, title: str, x_label: str, y_label: str, width: int = WIDTH, height: int = HEIGHT
) -> bytes:
    """The PNG of `lines` on shared axes from 0, with a grid and a legend in the top-left."""
    figure = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for i, line in enumerate(lines):
        xs, ys = [p[0] for p in line.points], [p[1] for p in line.points]
        axes.plot(
            xs, ys, color=PALETTE[i % len(PALETTE)], linewidth=2, label=line.label, marker="o" if len(xs) == 1 else None
        )
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    axes.set_title(title)
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    axes.grid(True, color="#e1e1e1")
    if lines:
        axes.legend(loc="upper left")
    figure.tight_layout()
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI)
    return out.getvalue()

"""How much memory building something keeps: tracemalloc's traced total before and after, with the
garbage collected (what the build allocated and freed again is not counted).

The interpreter's table of interned strings (vc_core.interning.shared) is left out: the whole process
shares it, and whether it happens to double during a build (by several MB, some hundreds of bytes per
item over 10,000) depends on what ran before in the process. Each distinct string costs it about 50
bytes, once. Other shared tables the build adds count as they grow."""

from __future__ import annotations

import gc
import inspect
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

from vc_core import interning

T = TypeVar("T")

# The line of `shared` that calls sys.intern: what the interned table allocates is traced to it.
_INTERN_LINE = next(
    number
    for number, line in enumerate(inspect.getsource(interning).splitlines(), start=1)
    if "sys.intern(" in line and "return" in line
)
_NOT_INTERNED = [tracemalloc.Filter(False, interning.__file__, _INTERN_LINE)]


def retained_bytes(build: Callable[[], T]) -> tuple[T, int]:
    """What `build` returns, and the bytes still allocated once it returned (the result holds them)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.take_snapshot().filter_traces(_NOT_INTERNED)
        built = build()
        gc.collect()
        after = tracemalloc.take_snapshot().filter_traces(_NOT_INTERNED)
        return built, sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    finally:
        if started:
            tracemalloc.stop()

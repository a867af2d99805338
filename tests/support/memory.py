"""How much memory building something keeps: tracemalloc's traced total before and after, with the
garbage collected (what the build allocated and freed again is not counted).

Shared tables the build adds to count as they grow: when one is resized during the build (the
interpreter's table of interned strings) its growth counts, up to a few MB. A bound per item leaves
room for that (about 0.3 KB per item over 10,000)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retained_bytes(build: Callable[[], T]) -> tuple[T, int]:
    """What `build` returns, and the bytes still allocated once it returned (the result holds them)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        built = build()
        gc.collect()
        return built, tracemalloc.get_traced_memory()[0] - before
    finally:
        if started:
            tracemalloc.stop()

"""One object for what many cached objects repeat.

A decoder makes a new string for every value it reads, so a cache of 100,000 pods holds 100,000 copies
of their namespace, of each label and annotation key, and of values a gang's pods share (the job's
name, the queue, the PodGroup, the node). Interned, each distinct text is held once; a string no cached
object still uses is freed as before (CPython's interned strings are mortal). `SharedParts` does the
same for larger immutable parts (a pod's spec as a cache keeps it, its status).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

# Longer text is rarely shared between objects (a last-applied-configuration, a script): interning it
# would only cost the table entry and the hashing of long text.
MAX_SHARED_LEN = 256


def shared(text: str) -> str:
    """`text` as the one string object holding it (short text only; longer text is returned as is)."""
    return sys.intern(text) if len(text) <= MAX_SHARED_LEN else text


def shared_or_none(text: str | None) -> str | None:
    return None if text is None else shared(text)


def shared_strings(mapping: Mapping[str, str]) -> dict[str, str]:
    """A copy of a string map (labels, annotations, a node selector) with its keys and values shared."""
    return {shared(key): shared(value) for key, value in mapping.items()}


class SharedParts(Generic[K, T]):
    """Equal immutable parts of cached objects as one object, found by a key that says what they hold.

    Bounded: when `limit` keys are held the table starts over (the parts already shared stay valid and
    shared; only new ones stop finding them), so parts of objects long gone do not pile up."""

    def __init__(self, limit: int = 100_000) -> None:
        self._parts: dict[K, T] = {}
        self._limit = limit

    def one(self, key: K, make: Callable[[], T]) -> T:
        """The part held for `key`, made (and held) when there is none."""
        part = self._parts.get(key)
        if part is None:
            if len(self._parts) >= self._limit:
                self._parts.clear()
            part = self._parts[key] = make()
        return part

    def __len__(self) -> int:
        return len(self._parts)


_MAPS: SharedParts[tuple[tuple[str, str], ...], dict[str, str]] = SharedParts()


def shared_map(mapping: Mapping[str, str]) -> dict[str, str]:
    """One dict for every equal string map (a template's node selector, an empty one), its keys and
    values shared: read only. Where the maps differ per object (a pod's labels and annotations name
    its task index), shared_strings is the cheaper of the two."""
    return _MAPS.one(tuple(mapping.items()), lambda: shared_strings(mapping))

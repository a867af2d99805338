"""One string object for text that many cached objects repeat.

A decoder makes a new string for every value it reads, so a cache of 100,000 pods holds 100,000 copies
of their namespace, of each label and annotation key, and of values a gang's pods share (the job's
name, the queue, the PodGroup, the node). Interned, each distinct text is held once; a string no cached
object still uses is freed as before (CPython's interned strings are mortal).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

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

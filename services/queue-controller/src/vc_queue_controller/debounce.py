"""Coalesce bursts of hints into one delayed pass per key.

PodGroups change phase often (every gang that starts or ends); writing the queue status on each
change would put a write per PodGroup transition on the hot path. Instead the first hint arms one
delayed submission and later hints ride on it, so a queue's status is written at most about once per
`delay_s` however busy it is (design: status writes stay off the hot path and are batched).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

STATUS_BATCH_S = 0.2


class Debouncer(Generic[K]):
    def __init__(self, submit_after: Callable[[K, float], None], *, delay_s: float = STATUS_BATCH_S) -> None:
        self._submit_after = submit_after
        self._delay_s = delay_s
        self._armed: set[K] = set()

    def hint(self, key: K) -> None:
        if key in self._armed:
            return
        self._armed.add(key)
        self._submit_after(key, self._delay_s)

    def passing(self, key: K) -> None:
        """A pass over `key` starts: it covers every hint so far, so the next hint arms anew."""
        self._armed.discard(key)

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
# A pass over a queue with tens of thousands of PodGroups costs tens of milliseconds; the delay grows
# with the last pass so that status passes never take more than about 1/PASS_SHARE of a core.
PASS_SHARE = 20
MAX_BATCH_S = 5.0


class Debouncer(Generic[K]):
    def __init__(self, submit_after: Callable[[K, float], None], *, delay_s: float = STATUS_BATCH_S) -> None:
        self._submit_after = submit_after
        self._delay_s = self._base_s = delay_s
        self._armed: set[K] = set()

    def took(self, seconds: float) -> None:
        """The last pass took this long: space the next ones so they stay a small share of the time."""
        self._delay_s = min(MAX_BATCH_S, max(self._base_s, seconds * PASS_SHARE))

    @property
    def delay_s(self) -> float:
        return self._delay_s

    def hint(self, key: K) -> None:
        if key in self._armed:
            return
        self._armed.add(key)
        self._submit_after(key, self._delay_s)

    def passing(self, key: K) -> None:
        """A pass over `key` starts: it covers every hint so far, so the next hint arms anew."""
        self._armed.discard(key)

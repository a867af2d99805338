"""Coalesce bursts of hints into one delayed pass per key.

PodGroups change phase often (every gang that starts or ends); writing the queue status on each
change would put a write per PodGroup transition on the hot path. Instead the first hint arms one
delayed submission and later hints ride on it, so a queue's status is written at most about once per
`delay_s` however busy it is (design: status writes stay off the hot path and are batched). The
hold, its settle and the flush at a pass are the runtime's status pacing (vc_runtime.status_pacing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from vc_runtime.status_pacing import Pacing, StatusHolds

K = TypeVar("K", bound=Hashable)

STATUS_BATCH_S = 0.2
# A pass over a queue with tens of thousands of PodGroups costs tens of milliseconds; the delay grows
# with the last pass so that status passes never take more than about 1/PASS_SHARE of a core.
PASS_SHARE = 20
MAX_BATCH_S = 5.0


class Debouncer(Generic[K]):
    def __init__(
        self,
        submit_after: Callable[[K, float], None],
        *,
        delay_s: float = STATUS_BATCH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._submit_after = submit_after
        self._base_s = delay_s
        self._delays: dict[K, float] = {}  # keys whose passes cost more than the base allows
        # A pass writes the whole status, so nothing spaces passes but the settle: a key is held from its
        # first hint until its pass starts.
        self._holds: StatusHolds[K] = StatusHolds(Pacing(every_s=0.0, settle_s=delay_s))
        self._clock = clock

    def took(self, key: K, seconds: float) -> None:
        """A pass over `key` took this long: space its next ones so they stay a small share of the
        time (a queue of 50,000 PodGroups does not slow the status of a queue of ten)."""
        delay = min(MAX_BATCH_S, seconds * PASS_SHARE)
        if delay > self._base_s:
            self._delays[key] = delay
        else:
            self._delays.pop(key, None)

    def delay_s(self, key: K) -> float:
        return self._delays.get(key, self._base_s)

    def hint(self, key: K) -> None:
        """The key's status may have changed: the first hint since its last pass arms one, `delay_s` on."""
        if self._holds.holds(key):
            return
        delay = self.delay_s(key)
        self._holds.hold(key, self._clock(), settle_s=delay)
        self._submit_after(key, delay)

    def passing(self, key: K) -> None:
        """A pass over `key` starts: it covers every hint so far, so the next hint arms anew."""
        self._holds.release(key)

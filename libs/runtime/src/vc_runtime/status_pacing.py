"""PURE: when a status change held back is due a write (hold, settle, flush).

Controllers see an object's status change far more often than it is worth a write: a gang's pods start
within a second of each other, a queue's PodGroups change phase many times a second. Each writer spaces
its writes per key the same way:
- hold: a change not worth writing yet is held, by key, with the time it becomes due;
- settle: it is due once it has waited `settle_s` from when it was first held (the rest of its burst
  joins it) and `every_s` has passed since the key's last write;
- flush: a write, or the change going away, releases what was held; the next change settles afresh.
Each service keeps its own `Pacing` (its figures) beside the code that writes. The clock is the
caller's (a monotonic reading, in seconds).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Pacing:
    """How one kind of status write is spaced."""

    every_s: float  # a key is rewritten at most this often
    settle_s: float  # a held change waits this long from when it was first held

    def due_at(self, *, held_since: float, written: float | None, settle_s: float | None = None) -> float:
        """When a change held since `held_since` may be written (`settle_s` overrides the usual settle
        for a change known to take longer, such as a gang whose pods are still starting)."""
        settled = held_since + (self.settle_s if settle_s is None else settle_s)
        return settled if written is None else max(settled, written + self.every_s)


class StatusHolds(Generic[K]):
    """Per key: when its status was last written, since when a change of it has been held, and until
    when it is held (the writer offers it again then: `due_keys`, `next_due`)."""

    def __init__(self, pacing: Pacing) -> None:
        self.pacing = pacing
        self.written_at: dict[K, float] = {}
        self.held_since: dict[K, float] = {}
        self._until: dict[K, float] = {}

    def due_at(self, key: K, now: float, *, settle_s: float | None = None) -> float:
        """When a change of `key` offered at `now` may be written: settled from when it was first held
        (from now, if nothing is held) and spaced from the key's last write. Holds nothing."""
        since = self.held_since.get(key, now)
        return self.pacing.due_at(held_since=since, written=self.written_at.get(key), settle_s=settle_s)

    def hold(self, key: K, now: float, *, settle_s: float | None = None) -> float:
        """Hold a change of `key` (held from now unless it already was) until it is due; that time."""
        self.held_since.setdefault(key, now)
        due = self.due_at(key, now, settle_s=settle_s)
        self._until[key] = due
        return due

    def hold_until(self, key: K, until: float) -> None:
        """Hold `key` until a time of the writer's own reckoning (a resend, a wait the pacing does not
        cover); it starts no settle."""
        self._until[key] = until

    def holds(self, key: K) -> bool:
        return key in self._until

    def wrote(self, key: K, now: float) -> None:
        """The key's status was written at `now`: the next write is spaced from it."""
        self.written_at[key] = now

    def restart_settle(self, key: K) -> None:
        """The held change came and went: the next one settles from when it is first held."""
        self.held_since.pop(key, None)

    def release(self, key: K) -> None:
        """Flush: nothing of `key` is held any more (written, or back to what is stored)."""
        self.held_since.pop(key, None)
        self._until.pop(key, None)

    def forget(self, key: K) -> None:
        """The object is gone: drop all of it."""
        self.release(key)
        self.written_at.pop(key, None)

    def due_keys(self, now: float) -> list[K]:
        """The keys held whose time has come."""
        return [key for key, until in self._until.items() if until <= now]

    def next_due(self, keep: Callable[[K], bool]) -> float | None:
        """The earliest time a key still worth writing (`keep`) is due; the others are no longer held
        (their settle is kept: one that is `keep` again later is due as it would have been)."""
        self._until = {k: v for k, v in self._until.items() if keep(k)}
        return min(self._until.values()) if self._until else None

    def keep_only(self, live: Container[K]) -> None:
        """Forget the keys not in `live` (deleted objects)."""
        for key in [k for k in self.written_at.keys() | self.held_since.keys() | self._until.keys() if k not in live]:
            self.forget(key)

    def __len__(self) -> int:
        """How many keys have an entry (for bounding the entries of deleted objects)."""
        return len(self.written_at.keys() | self.held_since.keys() | self._until.keys())

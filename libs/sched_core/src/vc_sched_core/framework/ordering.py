"""A priority queue ordered by a session's `less` function (Volcano's util.PriorityQueue)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from itertools import count
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, less: Callable[[T, T], bool], seq: int) -> None:
        self.item, self.less, self.seq = item, less, seq

    def __lt__(self, other: _Entry[T]) -> bool:
        # Session orders end in a unique tie-break (uid/name), so `less` is total and decides alone.
        return self.less(self.item, other.item)


class PriorityQueue(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._seq = count()
        self._heap: list[_Entry[T]] = [_Entry(i, less, next(self._seq)) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, self._less, next(self._seq)))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)

    def items(self) -> list[T]:
        """What it holds, in no particular order."""
        return [entry.item for entry in self._heap]

"""Bounded lists: every list the dashboard shows is one page of at most MAX_PAGE_SIZE rows, with a note
saying how many there are in all, so 100,000 pods never make a 100 MB page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

T = TypeVar("T")

DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 500
MAX_PAGE_NUMBER: Final = 1_000_000


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    total: int
    number: int  # 1-based
    size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def first(self) -> int:
        """1-based position of the first row shown (0 when there is none)."""
        return (self.number - 1) * self.size + 1 if self.items else 0

    @property
    def last(self) -> int:
        return self.first + len(self.items) - 1 if self.items else 0

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages

    @property
    def note(self) -> str:
        if not self.items:
            return f"showing 0 of {self.total:,}"
        return f"showing {self.first:,}-{self.last:,} of {self.total:,}"


def paginate(items: Sequence[T], *, number: int = 1, size: int = DEFAULT_PAGE_SIZE) -> Page[T]:
    """The `number`-th page (clamped to the pages there are) of `size` rows (clamped to 1..MAX_PAGE_SIZE)."""
    size = min(max(size, 1), MAX_PAGE_SIZE)
    pages = max(1, -(-len(items) // size))
    number = min(max(number, 1), pages)
    start = (number - 1) * size
    return Page(list(items[start : start + size]), len(items), number, size)

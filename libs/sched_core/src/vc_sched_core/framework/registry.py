"""Name -> factory registries, as values (Kubernetes' framework/runtime/registry.go shape)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class DuplicateNameError(ValueError):
    pass


class Registry(Generic[T]):
    def __init__(self, entries: Mapping[str, T] | None = None) -> None:
        self._entries: dict[str, T] = dict(entries or {})

    def register(self, name: str, factory: T) -> None:
        if name in self._entries:
            raise DuplicateNameError(f"{name!r} is already registered")
        self._entries[name] = factory

    def merge(self, other: Registry[T]) -> Registry[T]:
        merged = Registry(self._entries)
        for name in other.names():
            merged.register(name, other[name])
        return merged

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

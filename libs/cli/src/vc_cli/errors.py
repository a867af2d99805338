"""vcctl's errors: every one is a message for the user and an exit code (1: rejected/failed, 2: usage)."""

from __future__ import annotations


class CliError(Exception):
    def __init__(self, message: str, *, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def not_found(kind: str, key: str) -> CliError:
    """Every "not found" in one style, kubectl's: `job "default/train" not found`, `queue "research" not found`
    (the key is namespace/name for namespaced kinds)."""
    return CliError(f'{kind.lower()} "{key}" not found')

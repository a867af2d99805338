"""vcctl's errors: every one is a message for the user and an exit code (1: rejected/failed, 2: usage)."""

from __future__ import annotations


class CliError(Exception):
    def __init__(self, message: str, *, code: int = 1) -> None:
        super().__init__(message)
        self.code = code

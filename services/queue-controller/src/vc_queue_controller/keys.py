"""Dispatcher keys: `("Queue", name)` for a queue, `("Command", "<ns>/<name>")` for a queue Command."""

from __future__ import annotations

Key = tuple[str, str]
QUEUE = "Queue"
COMMAND = "Command"


def queue_key(name: str) -> Key:
    return (QUEUE, name)


def command_key(namespace: str | None, name: str) -> Key:
    return (COMMAND, f"{namespace or ''}/{name}")


def split_command(key: Key) -> tuple[str | None, str]:
    namespace, _, name = key[1].partition("/")
    return namespace or None, name

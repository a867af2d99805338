"""`vcctl up`'s service logs: one file per service under DATA/logs, rotated by size.

A service writes its JSON log lines to a pipe; `copy_to` moves them into the service's `RotatingLog`
(`DATA/logs/<service>.log`, then `.log.1` ... `.log.<keep>` as it fills), so the terminal keeps only
what a person reads there: progress, addresses and `ready`. Rotation happens between lines, so no
line is split across two files. `vcctl up --log-to-terminal` skips all of this (the services inherit
the terminal's stderr, as before).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import BinaryIO, Final

MAX_BYTES: Final = 10 * 1024 * 1024
KEEP: Final = 3
CHUNK: Final = 64 * 1024


def logs_dir(data: Path) -> Path:
    return data / "logs"


class RotatingLog:
    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO = path.open("ab")
        self._size = self._file.tell()
        self._mid_line = False

    def write(self, data: bytes) -> None:
        if self._size + len(data) > self.max_bytes and self._size > 0:
            if self._mid_line:  # the line the file ends with is finished there first
                end = data.find(b"\n") + 1
                if not end:
                    self._append(data)
                    return
                self._append(data[:end])
                data = data[end:]
            self._rotate()
        self._append(data)

    def _append(self, data: bytes) -> None:
        if not data:
            return
        self._file.write(data)
        self._file.flush()
        self._size += len(data)
        self._mid_line = not data.endswith(b"\n")

    def _rotate(self) -> None:
        self._file.close()
        for i in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
        if self.keep > 0:
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink(missing_ok=True)
        self._file = self.path.open("ab")
        self._size = 0
        self._mid_line = False

    def tail(self, lines: int) -> list[str]:
        """The last lines written (for an error message when a service fails to start)."""
        with self.path.open("rb") as f:
            f.seek(max(0, self._size - CHUNK))
            text = f.read().decode(errors="replace")
        return text.splitlines()[-lines:]

    def close(self) -> None:
        self._file.close()


async def copy_to(stream: asyncio.StreamReader, log: RotatingLog) -> None:
    """Everything the service writes, into its log, until the service closes its end (exits)."""
    while chunk := await stream.read(CHUNK):
        log.write(chunk)

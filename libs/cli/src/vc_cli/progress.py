"""`vcctl up`'s start-up progress: one status line on stderr, rewritten in place, saying which services
are up and which are still starting, e.g.

    starting Tephra [6/9] up: admission, gc, job-controller, ... | waiting: scheduler-0, node-sim (4s)

Only when stderr is a terminal: in a pipe or a log file (tests, `make run | tee`) it prints nothing,
and stdout is never touched, so `ready` there stays the machine-readable line scripts wait for. The
line is cleared before anything else is printed (the addresses, `ready`, an error).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from typing import TextIO

CLEAR_LINE = "\r\x1b[K"


class StartupProgress:
    def __init__(
        self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic, width: int | None = None
    ) -> None:
        self._stream = stream
        self._clock = clock
        self._started = clock()
        self._width = width
        self._last = ""
        try:
            self.enabled = stream.isatty()
        except (AttributeError, ValueError):  # a closed or odd stream: no progress, never a failure
            self.enabled = False

    def stage(self, text: str) -> None:
        """A step before the services start, e.g. "starting nats-server"."""
        self._show(f"starting Tephra: {text} ({self._elapsed()})")

    def services(self, up: Sequence[str], waiting: Sequence[str]) -> None:
        total = len(up) + len(waiting)
        parts = [f"starting Tephra [{len(up)}/{total}]"]
        if up:
            parts.append("up: " + ", ".join(up))
        if waiting:
            parts.append("waiting: " + ", ".join(waiting))
        self._show(" | ".join(parts) + f" ({self._elapsed()})")

    def clear(self) -> None:
        """Remove the status line (before the addresses and `ready`, or an error, are printed)."""
        if self.enabled and self._last:
            self._stream.write(CLEAR_LINE)
            self._stream.flush()
            self._last = ""

    def _elapsed(self) -> str:
        return f"{int(self._clock() - self._started)}s"

    def _show(self, line: str) -> None:
        if not self.enabled:
            return
        width = self._width or shutil.get_terminal_size((100, 24)).columns
        if len(line) > width - 1:  # a wrapped line could not be rewritten in place
            line = line[: max(width - 4, 10)] + "..."
        if line == self._last:
            return
        self._stream.write(CLEAR_LINE + line)
        self._stream.flush()
        self._last = line

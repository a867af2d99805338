"""Progress of a long benchmark step on stderr: on a terminal, one bar rewritten in place,

    placing pods [##########..........] 51,234/100,000  51% 412/s 2m04s

and in a pipe or a log (make bench | tee, CI), the same text as a plain line at most every `every_s`
seconds, so a cut-off run still says how far it got. stdout (the figures) is never touched. No
dependency: a bar is a few characters, and the benches run where only the workspace's packages are.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

CLEAR_LINE = "\r\x1b[K"
BAR_WIDTH = 20
REDRAW_S = 0.2  # a terminal's bar is redrawn at most this often, however often it is updated


class Progress:
    def __init__(
        self,
        label: str,
        total: int,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        every_s: float = 15.0,
        tty: bool | None = None,
    ) -> None:
        self.label, self.total = label, max(0, total)
        self._stream = stream or sys.stderr
        self._clock = clock
        self._started = clock()
        self._every_s = every_s
        self._printed_at = self._started
        self._drawn_at = float("-inf")
        self._drawn_done = 0
        self._done = 0
        self._shown = False
        if tty is None:
            try:
                tty = self._stream.isatty()
            except (AttributeError, ValueError):
                tty = False
        self.tty = tty

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def update(self, done: int) -> None:
        """`done` of `total` now (a count, not an increment)."""
        self._done = done
        now = self._clock()
        if self.tty:
            finished = done >= self.total > self._drawn_done  # the last step is always shown
            if now - self._drawn_at >= REDRAW_S or finished:
                self._drawn_at, self._drawn_done = now, done
                self._stream.write(CLEAR_LINE + self.line(now))
                self._stream.flush()
                self._shown = True
        elif now - self._printed_at >= self._every_s:
            self._printed_at = now
            print(self.line(now), file=self._stream, flush=True)

    def line(self, now: float | None = None) -> str:
        elapsed = (self._clock() if now is None else now) - self._started
        fraction = min(1.0, self._done / self.total) if self.total else 0.0
        filled = round(fraction * BAR_WIDTH)
        rate = self._done / elapsed if elapsed > 0 else 0.0
        minutes, seconds = divmod(int(elapsed), 60)
        return (
            f"{self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self._done:,}/{self.total:,} "
            f"{fraction:4.0%} {rate:,.0f}/s {minutes}m{seconds:02d}s"
        )

    def close(self) -> None:
        """Leave the final state on its own line (a terminal's bar is kept, not erased)."""
        if self.tty and self._shown:
            self._stream.write(CLEAR_LINE + self.line() + "\n")
            self._stream.flush()
            self._shown = False

"""The last resort of a shutdown: once SIGTERM came, the process is gone within its grace period.

run_service bounds each step of its shutdown, but some waits are out of its hands: the event loop's
close joins the default executor's threads (a scheduling cycle computing in `asyncio.to_thread` runs
on to its end, seconds at scale), the interpreter joins them again at exit, and a task that ignores
its cancellation holds the loop's close. A daemon timer armed at the signal ends the process when the
grace period is over, whatever still runs: with the service's own exit code when it had finished
(only threads doing work nobody waits for were left), else 1.
"""

from __future__ import annotations

import os
import sys
import threading

import structlog

log = structlog.get_logger(__name__)


class ExitDeadline:
    def __init__(self, after_s: float) -> None:
        self.after_s = after_s
        self._timer: threading.Timer | None = None
        self._code: int | None = None  # the service's exit code, once run_service has returned

    def arm(self) -> None:
        """Start counting (again: a second SIGTERM does not move the deadline)."""
        if self._timer is None:
            self._timer = threading.Timer(self.after_s, self._fire)
            self._timer.daemon = True
            self._timer.name = "exit-deadline"
            self._timer.start()

    def finished(self, code: int) -> None:
        """run_service has returned `code`: what runs after it is only the loop's and interpreter's close."""
        self._code = code

    def _fire(self) -> None:
        if self._code is None:
            log.error("shutdown.overdue", grace_s=self.after_s)
        else:
            log.warning("shutdown.threads_abandoned", grace_s=self.after_s)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(1 if self._code is None else self._code)

"""What a test leaves behind: asyncio tasks still pending on its event loop, and processes it started that
still run. The autouse fixtures in tests/conftest.py fail the test that leaked them, then cancel or kill
what leaked, so that one leak fails one test and not every test after it.

Processes are read from /proc (Linux, as the whole test suite assumes): the live descendants of this
process, each known by its pid and start time (a pid alone may be reused)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.support.waiting import eventually

PROC = Path("/proc")
# Long enough for what a fixture just stopped (a SIGTERMed service, a cancelled task) to finish going on a
# loaded machine; a real leak only makes the failing test this much slower.
TASK_GRACE_S = 2.0
PROCESS_GRACE_S = 10.0


@dataclass(frozen=True, slots=True)
class Child:
    pid: int
    started: int  # clock ticks since boot (field 22 of /proc/PID/stat)
    command: str

    def describe(self) -> str:
        return f"pid {self.pid}: {self.command}"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process, None when it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after its last ")".
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in (PROC / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError):
                found.extend(int(child) for child in (task / "children").read_text().split())
    return found


def _command(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200] or "?"


def live_descendants(root: int | None = None) -> set[Child]:
    """Every process below `root` (this one by default) that still runs; zombies (exited, waiting for
    their parent to reap them) do not count."""
    found: set[Child] = set()
    pending = _children_of(os.getpid() if root is None else root)
    while pending:
        pid = pending.pop()
        stat = _stat(pid)
        if stat is None:
            continue
        state, started = stat
        if state not in ("Z", "X"):
            found.add(Child(pid, started, _command(pid)))
        pending.extend(_children_of(pid))
    return found


def _wait(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def leaked_processes(before: set[Child], *, grace_s: float = PROCESS_GRACE_S) -> list[Child]:
    """Processes started since `before` was taken that still run after `grace_s` seconds."""

    def new() -> set[Child]:
        return live_descendants() - before

    _wait(lambda: not new(), grace_s)
    return sorted(new(), key=lambda child: child.pid)


def kill(children: list[Child]) -> None:
    """SIGKILL each, if it is still the same process (same start time)."""
    for child in children:
        stat = _stat(child.pid)
        if stat is not None and stat[1] == child.started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)


def _describe_task(task: asyncio.Task[object]) -> str:
    coro = task.get_coro()
    where = getattr(coro, "__qualname__", None) or repr(coro)
    return f"{task.get_name()} ({where})"


async def leaked_tasks(*, grace_s: float = TASK_GRACE_S) -> list[str]:
    """The tasks of the running loop, other than the caller's, still pending after `grace_s` seconds (what
    was just cancelled gets that long to finish). They are cancelled before this returns."""
    current = asyncio.current_task()

    def others() -> list[asyncio.Task[object]]:
        return [task for task in asyncio.all_tasks() if task is not current and not task.done()]

    with contextlib.suppress(AssertionError):
        await eventually(lambda: not others(), timeout=grace_s, interval=0.01, what="no pending tasks")
    leaked = others()
    described = sorted(_describe_task(task) for task in leaked)
    for task in leaked:
        task.cancel()
    if leaked:
        await asyncio.wait(leaked, timeout=grace_s)
    return described

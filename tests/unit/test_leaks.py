"""The leak checks the autouse fixtures of tests/conftest.py run after every test (tests/support/leaks.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from tests.support import leaks

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


async def test_a_pending_task_is_named_and_cancelled() -> None:
    forgotten = asyncio.create_task(asyncio.Event().wait(), name="forgotten")
    leaked = await leaks.leaked_tasks(grace_s=0.05)
    assert len(leaked) == 1 and leaked[0].startswith("forgotten (")
    assert forgotten.cancelled()


async def test_a_task_that_finishes_within_the_grace_is_no_leak() -> None:
    finishing = asyncio.create_task(asyncio.sleep(0.01), name="finishing")
    assert await leaks.leaked_tasks(grace_s=5.0) == []
    assert finishing.done()


def test_a_process_left_running_is_found_and_killed() -> None:
    before = leaks.live_descendants()
    process = subprocess.Popen(SLEEPER)
    try:
        leaked = leaks.leaked_processes(before, grace_s=0.05)
        assert [child.pid for child in leaked] == [process.pid]
        assert "time.sleep(600)" in leaked[0].describe()
        leaks.kill(leaked)
        assert process.wait(timeout=30) == -9
    finally:
        process.kill()
        process.wait()


def test_a_stopped_process_is_no_leak_and_a_zombie_is_not_running() -> None:
    before = leaks.live_descendants()
    process = subprocess.Popen(SLEEPER)
    process.kill()
    # Not yet reaped: a zombie until wait(); it runs no more, so it is no leak.
    assert leaks.leaked_processes(before, grace_s=30.0) == []
    process.wait()

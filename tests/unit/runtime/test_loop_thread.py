"""LoopThread: a duty on its own thread and event loop, owned by the caller's loop."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from vc_runtime.loop_thread import LoopThread


async def test_calls_run_on_the_thread_and_stop_ends_main() -> None:
    thread = LoopThread("duty")
    ended = threading.Event()

    async def main(stop: asyncio.Event) -> None:
        await stop.wait()
        ended.set()

    async def where() -> int:
        return threading.get_ident()

    await thread.start(main)
    assert await thread.call(where()) != threading.get_ident()
    assert not thread.finished()
    await thread.stop(timeout_s=5)
    assert ended.is_set() and thread.finished()


SERVICE: contextvars.ContextVar[str] = contextvars.ContextVar("service", default="")


async def test_the_thread_runs_in_the_context_of_its_starter() -> None:
    """What the service bound (its name and instance on every log line) holds on the thread too."""
    thread = LoopThread("context")
    SERVICE.set("job-controller")
    seen: list[str] = []

    async def main(stop: asyncio.Event) -> None:
        seen.append(SERVICE.get())

    await thread.start(main)
    await thread.stop(timeout_s=5)
    assert seen == ["job-controller"]


async def test_a_failure_of_main_is_raised_to_the_owner() -> None:
    thread = LoopThread("failing")

    async def main(stop: asyncio.Event) -> None:
        raise ValueError("the lease bucket is gone")

    await thread.start(main)
    with pytest.raises(ValueError, match="lease bucket"):
        await thread.stop(timeout_s=5)


async def test_a_main_that_does_not_stop_is_cancelled() -> None:
    thread = LoopThread("stubborn")
    cancelled = threading.Event()

    async def main(stop: asyncio.Event) -> None:
        try:
            await asyncio.sleep(3600)  # ignores `stop`
        except asyncio.CancelledError:
            cancelled.set()
            raise

    await thread.start(main)
    await thread.stop(timeout_s=0.2)
    assert cancelled.is_set() and thread.finished()

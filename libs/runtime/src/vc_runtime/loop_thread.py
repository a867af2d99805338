"""A thread with its own event loop, for duties the service's own loop must not delay.

A service's event loop can be held up for seconds: a long synchronous callback, or thousands of ready
callbacks queued ahead of a timer. A duty with a deadline (a membership lease) runs here instead, on
its own loop. It still shares the GIL, but CPython hands the GIL to a waiting thread every switch
interval (5 ms) while another thread runs Python code, so this loop keeps its pace while the service's
loop is blocked or a worker thread computes. (A single C call that holds the GIL without releasing it,
such as sorting a list of millions, stops every thread alike.)

The thread is a daemon: a process that must exit is never kept alive by it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

import uvloop

T = TypeVar("T")


class LoopThread:
    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()

    async def start(self, main: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        """Run `main(stop)` on the thread's loop; returns once that loop runs."""
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        # In a copy of the caller's context: what it bound (the service and instance every log line
        # carries, structlog.contextvars) holds on the thread too.
        context = contextvars.copy_context()
        target = partial(context.run, self._run, main, started)
        threading.Thread(target=target, name=self.name, daemon=True).start()
        await asyncio.wrap_future(started)

    def finished(self) -> bool:
        return self._done.done()

    def call(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        """From another loop: run `coro` on this thread's loop; the result (or error) comes back as a
        future of the caller's loop, and cancelling that future cancels `coro`."""
        assert self._loop is not None, "LoopThread.call before start"
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def stop(self, *, timeout_s: float) -> None:
        """Set `main`'s stop event and wait, up to `timeout_s`, for it to return (then cancel it, and
        wait as long again). Raises what `main` raised; a thread still running after that is left
        behind (a daemon: it ends with the process)."""
        loop, stop, task = self._loop, self._stop, self._task
        if loop is not None and stop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: it is done already
                loop.call_soon_threadsafe(stop.set)
            done = asyncio.wrap_future(self._done)
            if not (await asyncio.wait({done}, timeout=timeout_s))[0]:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(task.cancel)
                await asyncio.wait({done}, timeout=timeout_s)
        if self._done.done() and not self._done.cancelled():
            self._done.result()

    def _run(self, main: Callable[[asyncio.Event], Awaitable[None]], started: concurrent.futures.Future[None]) -> None:
        async def body() -> None:
            self._stop = asyncio.Event()
            self._task = asyncio.current_task()
            self._loop = asyncio.get_running_loop()
            started.set_result(None)
            await main(self._stop)

        try:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                runner.run(body())
        except asyncio.CancelledError:  # `stop` cancelled `main` after waiting for it in vain
            self._done.set_result(None)
        except BaseException as exc:  # handed to the owner's loop, which raises it
            if not started.done():
                started.set_exception(exc)
            self._done.set_exception(exc)
        else:
            self._done.set_result(None)

"""until(): items until the source ends or shutdown; a shutdown never interrupts the handling of an item,
and a cancellation from outside still propagates."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from vc_runtime.aio import until


class Source:
    """An async generator fed by the test; records whether it was closed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[int] = asyncio.Queue()
        self.closed = False

    async def items(self) -> AsyncIterator[int]:
        try:
            while True:
                yield await self.queue.get()
        finally:
            self.closed = True


async def test_yields_every_item_then_ends_with_the_source() -> None:
    async def three() -> AsyncIterator[int]:
        for i in range(3):
            yield i

    assert [i async for i in until(asyncio.Event(), three())] == [0, 1, 2]


async def test_shutdown_while_waiting_for_an_item_ends_the_iteration_and_closes_the_source() -> None:
    shutdown, source = asyncio.Event(), Source()
    got: list[int] = []
    first = asyncio.Event()

    async def read() -> str:
        async for item in until(shutdown, source.items()):
            got.append(item)
            first.set()
        return "ended"

    reader = asyncio.create_task(read())
    source.queue.put_nowait(1)
    await first.wait()
    await asyncio.sleep(0.01)  # the reader is waiting for the next item again
    shutdown.set()
    assert await asyncio.wait_for(reader, 5) == "ended"
    assert got == [1] and source.closed
    assert reader.cancelling() == 0  # the cancellation used to stop the wait was taken back


async def test_shutdown_during_the_handling_of_an_item_lets_it_finish() -> None:
    shutdown, source = asyncio.Event(), Source()
    handled: list[int] = []
    release = asyncio.Event()

    async def read() -> None:
        async for item in until(shutdown, source.items()):
            await release.wait()  # the handler awaits something: shutdown must not cancel it
            handled.append(item)

    reader = asyncio.create_task(read())
    source.queue.put_nowait(1)
    source.queue.put_nowait(2)
    await asyncio.sleep(0.01)
    shutdown.set()
    await asyncio.sleep(0.01)
    release.set()
    await asyncio.wait_for(reader, 5)
    assert handled == [1] and source.closed


async def test_a_cancellation_from_outside_propagates() -> None:
    shutdown, source = asyncio.Event(), Source()

    async def read() -> None:
        async for _ in until(shutdown, source.items()):
            pass

    reader = asyncio.create_task(read())
    await asyncio.sleep(0.01)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert source.closed


async def test_many_items_cost_no_task_each() -> None:
    async def many() -> AsyncIterator[int]:
        for i in range(1000):
            yield i

    before = len(asyncio.all_tasks())
    peak = before
    async for _ in until(asyncio.Event(), many()):
        peak = max(peak, len(asyncio.all_tasks()))
    assert peak <= before + 1  # the one helper waiting for the shutdown

"""The NATS connection every service holds: reconnect forever, drain on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import nats
import nats.errors
import structlog
from nats.aio.client import Client

log = structlog.get_logger(__name__)


@contextlib.asynccontextmanager
async def connect(url: str, *, name: str, connect_timeout: float = 5.0) -> AsyncIterator[Client]:
    """A connection that retries the first connect and every reconnect forever; drained on exit.

    A control plane must never give up on its bus (nats-py defaults to 60 attempts, then closes);
    pings every 10 s detect a dead TCP connection in ~30 s instead of ~5 minutes.
    """

    async def on_error(exc: Exception) -> None:
        log.warning("nats.error", error=str(exc))

    closing = False

    async def on_disconnect() -> None:
        if not closing:
            log.warning("nats.disconnected")

    async def on_reconnect() -> None:
        log.info("nats.reconnected")

    nc = await _first_connect(url, name=name, connect_timeout=connect_timeout, callbacks=(on_error, on_disconnect, on_reconnect))
    try:
        yield nc
    finally:
        closing = True
        if nc.is_connected:
            with contextlib.suppress(Exception):
                await nc.drain()
        if not nc.is_closed:
            await nc.close()


async def _first_connect(url: str, *, name: str, connect_timeout: float, callbacks: tuple[object, object, object]) -> Client:
    """nats-py does not retry a failed first connect; a service started before its server must wait."""
    attempt = 0
    while True:
        try:
            return await _connect_once(url, name=name, connect_timeout=connect_timeout, callbacks=callbacks)
        except (OSError, nats.errors.NoServersError, TimeoutError) as exc:
            attempt += 1
            delay = min(0.2 * attempt, 2.0)
            log.warning("nats.connect_retry", url=url, attempt=attempt, error=repr(exc), delay_s=delay)
            await asyncio.sleep(delay)


async def _connect_once(url: str, *, name: str, connect_timeout: float, callbacks: tuple[object, object, object]) -> Client:
    on_error, on_disconnect, on_reconnect = callbacks
    return await nats.connect(
        servers=[url],
        name=name,
        allow_reconnect=True,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        connect_timeout=connect_timeout,
        ping_interval=10,
        max_outstanding_pings=3,
        error_cb=on_error,
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        drain_timeout=10,
    )

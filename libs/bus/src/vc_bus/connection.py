"""The NATS connection every service holds: reconnect forever, drain on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats
import nats.errors
import structlog
from nats.aio.client import Client

from vc_bus.rawsub import RawDeliveryClient
from vc_core.retry import RetryPolicy
from vc_security.credentials import ClientCredentials, ca_from_env, credentials_from_env
from vc_security.identities import inbox_prefix

# error_cb, disconnected_cb, reconnected_cb as nats-py's Client.connect takes them
Callbacks = tuple[Callable[[Exception], Awaitable[None]], Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]

log = structlog.get_logger(__name__)


class _TlsEofNoise(logging.Filter):
    """asyncio warns "returning true from eof_received() has no effect when using ssl" each time a TLS
    connection of nats-py's ends: harmless (the protocol closes anyway), and once per vcctl command."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "eof_received() has no effect when using ssl" not in record.getMessage()


logging.getLogger("asyncio").addFilter(_TlsEofNoise())
# While busy (the previous write was less than BUSY_GAP_S ago) the flusher waits FLUSH_WINDOW_S
# before writing, so one socket write carries all the requests of that window. On a virtual machine
# every write wakes the server on another core (an IPI, a VM exit); batching halves nats-server's CPU
# under load (docs/benchmarks.md, "Where the CPU goes"). An idle client writes at once.
FLUSH_WINDOW_S = 0.002
BUSY_GAP_S = 0.01
# Closing at shutdown: at most DRAIN_S to drain, then CLOSE_S to close (a server that is gone answers
# neither); kept well inside the grace period of vc_runtime.service.
DRAIN_S = 3.0
CLOSE_S = 1.0
# The first connect is tried until the server answers (no socket yet, no server, a timeout).
FIRST_CONNECT_RETRY = RetryPolicy((OSError, nats.errors.NoServersError, TimeoutError), base_s=0.2, cap_s=2.0)


@contextlib.asynccontextmanager
async def connect(
    url: str,
    *,
    name: str,
    connect_timeout: float = 5.0,
    credentials: ClientCredentials | None = None,
    observe_error: Callable[[Exception], None] | None = None,
) -> AsyncIterator[Client]:
    """A connection that retries the first connect and every reconnect forever; drained on exit.

    A control plane must never give up on its bus (nats-py defaults to 60 attempts, then closes);
    pings every 10 s detect a dead TCP connection in ~30 s instead of ~5 minutes. It authenticates
    with `credentials` (default: the file `VC_NATS__CREDS` names, none when unset): the identity's
    NKey, replies on the identity's own inbox prefix, and TLS checked against the credentials' CA.
    `observe_error` is told of every error the server sends (a client tells a refusal by it).
    """
    credentials = credentials if credentials is not None else credentials_from_env()

    async def on_error(exc: Exception) -> None:
        log.warning("nats.error", error=str(exc))
        if observe_error is not None:
            observe_error(exc)

    closing = False

    async def on_disconnect() -> None:
        if not closing:
            log.warning("nats.disconnected")

    async def on_reconnect() -> None:
        log.info("nats.reconnected")

    options = client_options(credentials, ca_pem=None if credentials and credentials.ca_pem else ca_from_env())
    nc = await _first_connect(
        url,
        name=name,
        connect_timeout=connect_timeout,
        callbacks=(on_error, on_disconnect, on_reconnect),
        options=options,
    )
    nc.dialled = _Dialled(url, connect_timeout, credentials)
    try:
        yield nc
    finally:
        closing = True
        await close_within(nc, DRAIN_S, CLOSE_S)


async def close_within(nc: CoalescingClient, drain_s: float, close_s: float) -> None:
    """Drain (subscriptions finish what they got, what was published is flushed), then close, each
    step bounded: a service shutting down must be gone within its grace period, also when its server
    is. A connection that is down is not drained, and its unsent bytes are dropped: nats-py would
    write them to the dead socket while closing and raise, leaving the connection half closed."""
    if nc.is_connected:
        try:
            async with asyncio.timeout(drain_s):
                await nc.drain()
        except Exception as exc:  # the server went away meanwhile, or the drain took too long
            log.warning("nats.drain_failed", error=repr(exc)[:200])
    if nc.is_closed:
        return
    if not nc.is_connected:
        nc.discard_unsent()
    try:
        async with asyncio.timeout(close_s):
            await nc.close()
    except Exception as exc:  # closing only; the process is on its way out
        log.warning("nats.close_failed", error=repr(exc)[:200])


@dataclass(frozen=True, slots=True)
class _Dialled:
    """How a connection was opened, so that another one can be opened the same way."""

    url: str
    connect_timeout: float
    credentials: ClientCredentials | None


def connect_like(nc: Client, *, name: str) -> contextlib.AbstractAsyncContextManager[Client]:
    """Another connection to the same servers as `nc` (one `connect` opened), as the same identity.

    For duties that must not share a connection, nor an event loop, with the rest of the service (the
    membership lease: vc_runtime.membership)."""
    dialled = getattr(nc, "dialled", None)
    if not isinstance(dialled, _Dialled):
        raise TypeError("connect_like: the connection was not opened by vc_bus.connection.connect")
    return connect(dialled.url, name=name, connect_timeout=dialled.connect_timeout, credentials=dialled.credentials)


def client_options(credentials: ClientCredentials | None, *, ca_pem: bytes | None = None) -> dict[str, Any]:
    """nats-py's connect options for an identity: NKey, inbox prefix, and TLS checked against the
    credentials' CA (else `ca_pem`, else the system's CAs) when the server requires TLS."""
    options: dict[str, Any] = {}
    if credentials is not None:
        options["nkeys_seed_str"] = credentials.key.seed
        options["inbox_prefix"] = inbox_prefix(credentials.identity)
    ca = credentials.ca_pem if credentials is not None and credentials.ca_pem else ca_pem
    if ca:
        options["tls"] = ssl.create_default_context(cadata=ca.decode())
    return options


class PlainTextRefused(RuntimeError):
    """A `tls://` URL reached a server that offers plain text."""


def check_tls(nc: Client, url: str) -> None:
    """A `tls://` URL means TLS or nothing: nats-py upgrades only when the server asks, so a server (or
    something in between) offering plain text would otherwise get the connection, and could relay
    the NKey's signature of its nonce to the real server."""
    if any(u.strip().startswith("tls://") for u in url.split(",")) and not nc._server_info.get("tls_required"):
        raise PlainTextRefused(f"{url}: the server does not require TLS; refusing to talk to it in plain text")


async def _first_connect(
    url: str, *, name: str, connect_timeout: float, callbacks: Callbacks, options: dict[str, Any]
) -> CoalescingClient:
    """nats-py does not retry a failed first connect; a service started before its server must wait."""

    def on_retry(error: BaseException, failures: int, delay_s: float) -> None:
        log.warning("nats.connect_retry", url=url, attempt=failures, error=repr(error), delay_s=delay_s)

    nc = await FIRST_CONNECT_RETRY.call(
        lambda: _connect_once(url, name=name, connect_timeout=connect_timeout, callbacks=callbacks, options=options),
        sleep=asyncio.sleep,
        on_retry=on_retry,
    )
    try:
        check_tls(nc, url)
    except PlainTextRefused:
        await nc.close()
        raise
    return nc


class CoalescingClient(RawDeliveryClient):
    """nats-py's client with a flusher that batches under load (see FLUSH_WINDOW_S), and raw
    subscriptions for watches (vc_bus.rawsub)."""

    dialled: _Dialled | None = None  # set by `connect`, for `connect_like`

    def discard_unsent(self) -> None:
        """Drop what waits to be written: for a connection that is down and being closed for good."""
        self._pending = []
        self._pending_data_size = 0

    async def _flusher(self) -> None:
        assert self._transport is not None and self._flush_queue is not None
        loop = asyncio.get_running_loop()
        last_write = -1.0
        while True:
            if not self.is_connected or self.is_connecting:
                break
            waiting = [await self._flush_queue.get()]
            busy = loop.time() - last_write < BUSY_GAP_S
            await asyncio.sleep(FLUSH_WINDOW_S if busy else 0)
            last_write = loop.time()
            while not self._flush_queue.empty():
                waiting.append(self._flush_queue.get_nowait())
            try:
                if self._pending_data_size > 0:
                    self._transport.writelines(self._pending[:])
                    self._pending = []
                    self._pending_data_size = 0
                    await self._transport.drain()
            except OSError as exc:
                await self._error_cb(exc)
                await self._process_op_err(exc)
                break
            except (asyncio.CancelledError, RuntimeError, AttributeError):
                break  # the loop is closing (as nats-py's own flusher)
            finally:
                for future in waiting:
                    if not future.done():
                        future.set_result(None)


async def _connect_once(
    url: str, *, name: str, connect_timeout: float, callbacks: Callbacks, options: dict[str, Any]
) -> CoalescingClient:
    on_error, on_disconnect, on_reconnect = callbacks
    nc = CoalescingClient()
    await nc.connect(
        servers=url.split(","),  # a cluster: any of them; nats-py also learns the others from the server
        name=name,
        allow_reconnect=True,
        max_reconnect_attempts=-1,
        # nats-py annotates these int but uses them as seconds (asyncio.sleep / wait_for): floats work
        reconnect_time_wait=0.5,  # type: ignore[arg-type]
        connect_timeout=connect_timeout,  # type: ignore[arg-type]
        ping_interval=10,
        max_outstanding_pings=3,
        error_cb=on_error,
        disconnected_cb=on_disconnect,
        reconnected_cb=on_reconnect,
        drain_timeout=DRAIN_S,  # type: ignore[arg-type]
        **options,
    )
    return nc

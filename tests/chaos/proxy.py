"""A fault-injecting TCP proxy between one service instance and a NATS server (asyncio, in the harness).

Modes, switched at any moment for every connection through the proxy:
- pass: bytes flow both ways as they come;
- delay: every chunk is held `delay` seconds before it goes on (order kept), both ways;
- drop: a black hole, like a firewall DROP rule: bytes both ways are discarded and the connections
  stay open, so the client only notices by timeouts. A TCP stream with lost bytes cannot resume, so
  when the drop ends the connections are reset and the client reconnects;
- partition: like a REJECT rule: open connections are reset and new ones are accepted and reset at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["pass", "delay", "drop", "partition"]
CHUNK = 64 * 1024


@dataclass
class _Pipe:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


@dataclass
class FaultProxy:
    upstream_port: int
    host: str = "127.0.0.1"
    mode: Mode = "pass"
    delay_s: float = 0.0
    port: int = 0
    _server: asyncio.Server | None = None
    _open: set[asyncio.StreamWriter] = field(default_factory=set)
    connections: int = 0  # accepted so far (tests and reports)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._serve, self.host, self.port or 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._reset_all()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    # -- modes -------------------------------------------------------------------------------------
    def heal(self) -> None:
        if self.mode == "drop":
            self._reset_all()  # their streams lost bytes
        self.mode, self.delay_s = "pass", 0.0

    def delay(self, seconds: float) -> None:
        self.mode, self.delay_s = "delay", seconds

    def drop(self) -> None:
        self.mode = "drop"

    def partition(self) -> None:
        self.mode = "partition"
        self._reset_all()

    def _reset_all(self) -> None:
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    # -- one connection ----------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self.mode == "partition":
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.upstream_port)
        except OSError:  # the server is down: the client sees its connection refused, as it would directly
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        try:
            async with asyncio.TaskGroup() as tg:
                for source, sink in (
                    (_Pipe(reader, writer), _Pipe(up_reader, up_writer)),
                    (_Pipe(up_reader, up_writer), _Pipe(reader, writer)),
                ):
                    tg.create_task(self._pump(source, sink), name="proxy:pump")
        except* (OSError, asyncio.IncompleteReadError):
            pass  # a reset connection (ours or theirs): both sides are closed below
        finally:
            for w in (writer, up_writer):
                self._open.discard(w)
                w.transport.abort()

    async def _pump(self, source: _Pipe, sink: _Pipe) -> None:
        """Copy one direction; delayed chunks go through a queue so their order is kept."""
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        async def deliver() -> None:
            while (item := await queue.get()) is not None:
                due, data = item
                if (wait := due - loop.time()) > 0:
                    await asyncio.sleep(wait)
                sink.writer.write(data)
                await sink.writer.drain()

        async with asyncio.TaskGroup() as tg:
            tg.create_task(deliver(), name="proxy:deliver")
            while data := await source.reader.read(CHUNK):
                if self.mode == "drop":
                    continue
                await queue.put((loop.time() + (self.delay_s if self.mode == "delay" else 0.0), data))
            await queue.put(None)
        sink.writer.transport.abort()  # the other side closed: close this one too


@dataclass
class Link:
    """Every path from one service instance to the NATS servers (one proxy per server)."""

    name: str
    proxies: list[FaultProxy]

    @property
    def url(self) -> str:
        return ",".join(p.url for p in self.proxies)

    def heal(self) -> None:
        for p in self.proxies:
            p.heal()

    def delay(self, seconds: float) -> None:
        for p in self.proxies:
            p.delay(seconds)

    def drop(self) -> None:
        for p in self.proxies:
            p.drop()

    def partition(self) -> None:
        for p in self.proxies:
            p.partition()

    async def close(self) -> None:
        for p in self.proxies:
            await p.close()


async def open_link(name: str, upstream_ports: list[int]) -> Link:
    return Link(name, [await FaultProxy(port).start() for port in upstream_ports])

"""Asking a real nats-server whether an identity may publish or subscribe on a subject.

A raw protocol client (TLS, then CONNECT signed with the identity's NKey): each probe sends one PUB
or SUB followed by a PING on the same stream. The server answers a forbidden PUB or SUB with
`-ERR 'Permissions Violation ...'` before the PONG, so each answer is exact and needs no waiting on
time. (nats-py writes its PINGs ahead of queued publishes, so it cannot tell which one was refused.)
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlparse

import nats
import nats.errors
import nkeys

from vc_bus.connection import client_options
from vc_security.credentials import ClientCredentials


class Probe:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer
        self._sid = 0

    async def _round_trip(self, command: bytes) -> list[str]:
        """Send `command` and a PING; the -ERR lines that came before the PONG."""
        self._writer.write(command + b"PING\r\n")
        await self._writer.drain()
        errors: list[str] = []
        while True:
            line = (await asyncio.wait_for(self._reader.readline(), 10)).decode().rstrip("\r\n")
            if line == "PONG":
                return errors
            if line == "PING":
                self._writer.write(b"PONG\r\n")
            elif line.startswith("-ERR"):
                errors.append(line)
            elif line.startswith(("MSG ", "HMSG ")):
                size = int(line.split()[-1])
                await self._reader.readexactly(size + 2)

    async def may_publish(self, subject: str) -> bool:
        return not await self._round_trip(f"PUB {subject} 2\r\n{{}}\r\n".encode())

    async def may_subscribe(self, subject: str) -> bool:
        self._sid += 1
        errors = await self._round_trip(f"SUB {subject} {self._sid}\r\n".encode())
        await self._round_trip(f"UNSUB {self._sid}\r\n".encode())
        return not errors


@contextlib.asynccontextmanager
async def probe(url: str, credentials: ClientCredentials) -> AsyncIterator[Probe]:
    parsed = urlparse(url)
    assert parsed.hostname is not None and parsed.port is not None
    reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port)
    try:
        info = json.loads((await reader.readline()).decode().removeprefix("INFO "))
        if info.get("tls_required"):
            context = ssl.create_default_context(cadata=(credentials.ca_pem or b"").decode() or None)
            await writer.start_tls(context, server_hostname=parsed.hostname)
        key = nkeys.from_seed(bytearray(credentials.key.seed.encode()))
        signature = base64.b64encode(key.sign(info["nonce"].encode())).decode()
        connect = {
            "verbose": False,
            "pedantic": False,
            "protocol": 1,
            "headers": True,
            "nkey": credentials.key.public_key,
            "sig": signature,
        }
        found = Probe(reader, writer)
        refused = await found._round_trip(f"CONNECT {json.dumps(connect)}\r\n".encode())
        assert not refused, f"{credentials.identity} was not let in: {refused}"
        yield found
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def refused_connection(url: str, credentials: ClientCredentials | None, *, ca_pem: bytes | None) -> str:
    """The reason the server gives for refusing this client through nats-py ('' when it is let in)."""

    async def quiet(_: Exception) -> None:
        pass

    try:
        nc = await nats.connect(
            url,
            allow_reconnect=False,
            max_reconnect_attempts=0,
            connect_timeout=5,
            error_cb=quiet,
            **client_options(credentials, ca_pem=ca_pem),
        )
    except (nats.errors.Error, OSError, TimeoutError) as exc:
        return str(exc) or type(exc).__name__
    await nc.close()
    return ""

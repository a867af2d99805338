"""vc_kube.tls against a local TLS 1.3 server (no apiserver needed): a session ticket the server issues
is remembered for its name and resumes the next connection; a server that issues none is looked at for
one on a connection's first reads only, not on every read for as long as the connection lives."""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from vc_kube.tls import ResumingContext
from vc_security.pki import new_server_cert

ROUNDS = 12  # answers read on one connection: more than the reads a ticket is looked for on


@asynccontextmanager
async def echo_server(tmp_path: Path, *, tickets: int) -> AsyncIterator[tuple[int, ResumingContext]]:
    """A TLS 1.3 server answering each line, issuing `tickets` session tickets per connection; and a
    client context that trusts it."""
    now = datetime.datetime.now(datetime.UTC)
    day = datetime.timedelta(days=1)
    cert = new_server_cert("tephra-test-ca", ["localhost"], now, ca_validity=day, validity=day)
    (tmp_path / "cert.pem").write_bytes(cert.cert_pem)
    (tmp_path / "key.pem").write_bytes(cert.key_pem)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.minimum_version = ssl.TLSVersion.TLSv1_3
    server_context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server_context.num_tickets = tickets

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.readline():
            writer.write(b"ok\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context)
    client = ResumingContext()
    client.load_verify_locations(cadata=cert.ca_pem.decode())
    try:
        yield server.sockets[0].getsockname()[1], client
    finally:
        server.close()
        await server.wait_closed()


async def talk(port: int, context: ResumingContext) -> ssl.SSLObject:
    """ROUNDS requests and answers on one new connection; its TLS object."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
    try:
        for _ in range(ROUNDS):
            writer.write(b"hello\n")
            assert await reader.readline() == b"ok\n"
        return writer.get_extra_info("ssl_object")
    finally:
        writer.close()
        await writer.wait_closed()


def test_a_ticket_is_kept_and_resumes_the_next_connection(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with echo_server(tmp_path, tickets=1) as (port, context):
            first = await talk(port, context)
            assert not first.session_reused
            assert (await talk(port, context)).session_reused

    asyncio.run(scenario())


def test_a_server_without_tickets_is_looked_at_on_the_first_reads_only(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with echo_server(tmp_path, tickets=0) as (port, context):
            first = await talk(port, context)
            assert first._reads_checked == 8 < ROUNDS  # not one look per read for the connection's life
            assert not (await talk(port, context)).session_reused  # nothing was kept to offer

    asyncio.run(scenario())

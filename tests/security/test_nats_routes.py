"""The production overlay's NATS cluster, on real nats-servers: three servers joined by the `cluster`
block deploy/k8s ships (its TLS both ways, with the certificate the bootstrap makes) form a JetStream
cluster that keeps an R3 bucket, and a stranger at the route port is not let in, with no certificate
or with one another CA signed.

The shipped block is used as is but for what only a cluster has: the listen address and the routes
point at 127.0.0.1 (the certificate also serves that address) and the mounted files are in a
temporary directory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import re
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from vc_bus.buckets import open_bucket
from vc_bus.connection import connect
from vc_bus.server import NatsServer, free_port
from vc_security import pki
from vc_security.cluster import AUTH_SECRET, TLS_SECRET, creds_secret, plan
from vc_security.credentials import decode_credentials
from vc_security.identities import SCHEDULER_LEDGER_BUCKET
from vc_security.natsconf import tls_block

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_CONF = ROOT / "deploy" / "k8s" / "overlays" / "production" / "nats-server.conf"
MOUNT = "/etc/nats/tls/"


def shipped_cluster_block() -> str:
    """The `cluster { ... }` block of the production configuration, braces balanced."""
    text = PRODUCTION_CONF.read_text()
    start = text.index("cluster {")
    depth = 0
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if text[end] == "}" and depth == 0:
            return text[start : end + 1]
    raise AssertionError("the cluster block never closes")


def local_cluster_block(files: Path, port: int, peers: list[int]) -> str:
    block = shipped_cluster_block().replace(MOUNT, f"{files}/")
    block = block.replace('listen: "0.0.0.0:6222"', f'listen: "127.0.0.1:{port}"')
    routes = "\n".join(f"    nats://127.0.0.1:{p}" for p in peers)
    return re.sub(r"routes: \[[^\]]*\]", f"routes: [\n{routes}\n  ]", block)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[list[NatsServer], dict[str, str], Path]]:
    root = tmp_path_factory.mktemp("nats-routes")
    made = plan({}, namespace="tephra-system", backend="kube", now=datetime.datetime.now(datetime.UTC))

    def raw(secret: str, key: str) -> bytes:
        return base64.b64decode(made.data[secret][key])

    files = root / "tls"
    files.mkdir()
    for key in ("tls.crt", "tls.key", "ca.crt"):
        (files / key).write_bytes(raw(TLS_SECRET, key))
    route_ports = [free_port() for _ in range(3)]
    servers = []
    for i, port in enumerate(route_ports):
        security = (
            f"server_name: nats-{i}\n"
            + local_cluster_block(files, port, route_ports)
            + "\n"
            + raw(AUTH_SECRET, "auth.conf").decode()
            + tls_block(str(files / "tls.crt"), str(files / "tls.key"))
        )
        servers.append(NatsServer(root / f"nats-{i}", security=security, tls=True))
    try:
        for server in servers:
            server.start()
        secrets = {"scheduler": raw(creds_secret("scheduler"), "creds.json").decode()}
        yield servers, {**secrets, "routes": ",".join(map(str, route_ports))}, files
    finally:
        for server in servers:
            server.stop()


async def test_the_shipped_routes_join_three_servers_that_keep_an_r3_bucket(
    cluster: tuple[list[NatsServer], dict[str, str], Path],
) -> None:
    servers, secrets, _ = cluster
    scheduler = decode_credentials(secrets["scheduler"].encode(), source="scheduler")
    async with connect(servers[0].url, name="scheduler", credentials=scheduler) as nc:
        js = nc.jetstream(timeout=5)
        deadline = asyncio.get_running_loop().time() + 60
        while True:  # the servers elect a JetStream meta leader once the routes are up
            try:
                kv = await open_bucket(js, SCHEDULER_LEDGER_BUCKET, replicas=3)
                break
            except Exception:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.5)
        await kv.put("k", b"v")
        info = await js.stream_info(f"KV_{SCHEDULER_LEDGER_BUCKET}")
        assert info.config.num_replicas == 3 and info.cluster is not None
        assert len(info.cluster.replicas or []) == 2  # the leader and two peers: all three servers
    async with connect(servers[2].url, name="scheduler", credentials=scheduler) as nc:
        kv = await open_bucket(nc.jetstream(timeout=5), SCHEDULER_LEDGER_BUCKET, replicas=3)
        assert (await kv.get("k")).value == b"v"


async def _route_answer(port: int, context: ssl.SSLContext) -> bytes:
    """What a server says, over TLS, to a client at its route port that shows `context`'s certificate
    (routes speak TLS from the first byte: nothing in plain text)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        answer = b""
        with contextlib.suppress(ssl.SSLError, ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            await writer.start_tls(context, server_hostname="127.0.0.1")
            writer.write(b'CONNECT {"verbose":false,"name":"stranger"}\r\nPING\r\n')
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(4096), 5)
        return answer
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def test_a_stranger_cannot_join_at_the_route_port(
    cluster: tuple[list[NatsServer], dict[str, str], Path], tmp_path: Path
) -> None:
    _, secrets, files = cluster
    port = int(secrets["routes"].split(",")[0])
    # No certificate (the server's own CA trusted, so the refusal is the server's, not ours).
    bare = ssl.create_default_context(cafile=str(files / "ca.crt"))
    assert b"INFO" not in await _route_answer(port, bare)
    # A certificate for the right names, signed by another CA.
    now = datetime.datetime.now(datetime.UTC)
    other = pki.new_server_cert(
        "other-ca",
        ["nats-3.nats-cluster.tephra-system.svc"],
        now,
        ca_validity=datetime.timedelta(days=1),
        validity=datetime.timedelta(days=1),
    )
    (tmp_path / "other.crt").write_bytes(other.cert_pem)
    (tmp_path / "other.key").write_bytes(other.key_pem)
    forged = ssl.create_default_context(cafile=str(files / "ca.crt"))
    forged.load_cert_chain(tmp_path / "other.crt", tmp_path / "other.key")
    assert b"INFO" not in await _route_answer(port, forged)
    # The genuine certificate is answered with the server's INFO (what the servers show each other).
    genuine = ssl.create_default_context(cafile=str(files / "ca.crt"))
    genuine.load_cert_chain(files / "tls.crt", files / "tls.key")
    assert (await _route_answer(port, genuine)).startswith(b"INFO {")

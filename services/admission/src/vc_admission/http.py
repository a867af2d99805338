"""The Kubernetes webhook front-end: an aiohttp HTTPS server whose routes call `webhook.handle_review`.

It runs on its own TLS site inside the service's task group, so a slow webhook never fails /livez.
`ServingTLS` lets the certificate change under a running server (rotation without a restart).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ssl
import tempfile
from pathlib import Path

import structlog
from aiohttp import web

from vc_admission.webhook import ROUTES, handle_review
from vc_validation import MAX_REQUEST_BYTES, AdmissionContext

log = structlog.get_logger(__name__)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


class ServingTLS:
    """One server-side SSLContext whose certificate can be replaced while it serves.

    OpenSSL copies the context's certificate into each connection when the handshake starts, so after
    `load` new connections present the new certificate and open ones keep theirs.
    """

    def __init__(self) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._loaded = b""

    @property
    def loaded(self) -> bool:
        return bool(self._loaded)

    def load(self, cert_pem: bytes, key_pem: bytes) -> bool:
        """Serve this certificate from the next handshake on; False when it is the one already served."""
        digest = hashlib.sha256(cert_pem + b"\0" + key_pem).digest()
        if digest == self._loaded:
            return False
        # load_cert_chain reads files only: a private directory (0700) that exists for this call alone.
        with tempfile.TemporaryDirectory(prefix="tephra-tls-") as tmp:
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            key.touch(mode=0o600)
            key.write_bytes(key_pem)
            cert.write_bytes(cert_pem)
            self.context.load_cert_chain(cert, key)
        self._loaded = digest
        return True


def application(ctx: AdmissionContext) -> web.Application:
    async def review(request: web.Request) -> web.Response:
        body = await request.read()
        return web.json_response(handle_review(request.path, body, ctx))

    app = web.Application(client_max_size=MAX_REQUEST_BYTES + 1024)
    for path in ROUTES:
        app.router.add_post(path, review)
    return app


async def serve_webhook(
    ctx: AdmissionContext,
    *,
    host: str,
    port: int,
    tls: ssl.SSLContext,
    started: asyncio.Event | None = None,
    shutdown: asyncio.Event | None = None,
) -> None:
    """Serve until `shutdown` is set (or forever), then close the listener."""
    runner = web.AppRunner(application(ctx), handle_signals=False, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        await site.start()
        log.info("webhook.listening", host=host, port=port, routes=sorted(ROUTES))
        if started is not None:
            started.set()
        await (shutdown or asyncio.Event()).wait()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(runner.cleanup())

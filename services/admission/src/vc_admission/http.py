"""The Kubernetes webhook front-end: an aiohttp HTTPS server whose routes call `webhook.handle_review`.

It runs on its own TLS site inside the service's task group, so a slow webhook never fails /livez.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from pathlib import Path

import structlog
from aiohttp import web

from vc_admission.rules import MAX_REQUEST_BYTES, AdmissionContext
from vc_admission.webhook import ROUTES, handle_review

log = structlog.get_logger(__name__)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    return context


def application(ctx: AdmissionContext) -> web.Application:
    async def review(request: web.Request) -> web.Response:
        body = await request.read()
        return web.json_response(handle_review(request.path, body, ctx))

    app = web.Application(client_max_size=MAX_REQUEST_BYTES + 1024)
    for path in ROUTES:
        app.router.add_post(path, review)
    return app


async def serve_webhook(ctx: AdmissionContext, *, host: str, port: int, tls: ssl.SSLContext,
                        started: asyncio.Event | None = None) -> None:
    runner = web.AppRunner(application(ctx), handle_signals=False, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        await site.start()
        log.info("webhook.listening", host=host, port=port, routes=sorted(ROUTES))
        if started is not None:
            started.set()
        await asyncio.Event().wait()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.shield(runner.cleanup())

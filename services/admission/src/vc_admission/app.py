"""Wiring of the admission service: the embedded write API on NATS request/reply, served by a pool."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

import structlog
from nats.aio.msg import Msg
from prometheus_client import Counter, Histogram

from vc_admission.callers import Callers
from vc_admission.consumers import serve_consumer_request
from vc_admission.context import CacheContext
from vc_admission.review import Admitter
from vc_admission.webhook_tls import WebhookOptions, add_webhook_arguments, webhook_worker
from vc_admission.write_api import WriteApi, error_reply
from vc_bus.pod_rekeying import rekey_pods
from vc_proto import subjects
from vc_proto.api import INTERNAL
from vc_runtime.aio import wait_or_stop
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_security.identities import ADMIN
from vc_security.registry import Person

log = structlog.get_logger(__name__)
WORKERS = 32
REQUESTS = Counter("tephra_admission_requests_total", "Write requests handled", ["outcome"])
for _outcome in ("ok", "error"):  # present (0) from the start: a dashboard shows 0, not "No data"
    REQUESTS.labels(_outcome)
LATENCY = Histogram("tephra_admission_request_seconds", "Write request handling time")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_webhook_arguments(parser)
    parser.add_argument(
        "--identities", help="who may write through the NATS API and where (identities.json; re-read on change)"
    )


class AdmissionOptions(WebhookOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments (the webhook's and --identities), typed, with their defaults."""

    identities: str | None = None


class AdmissionApp:
    name = "admission"

    def __init__(self, settings: RuntimeSettings) -> None:
        self.settings = settings
        self.options = options_of(settings, AdmissionOptions)

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        if self.settings.backend == "nats":  # before anything is served (vc_bus.pod_rekeying)
            await rekey_pods(ctx.nc.jetstream(), replicas=self.settings.nats_replicas)
        context = CacheContext(ctx.store)
        api = WriteApi(ctx.store, Admitter(context))
        callers = Callers(self.options.identities)
        informers = (context.queue_informer, context.jobs, context.podgroups)
        ctx.probes.require("caches-synced")
        inbox: asyncio.Queue[Msg] = asyncio.Queue(maxsize=WORKERS * 4)

        async def enqueue(msg: Msg) -> None:
            await inbox.put(msg)  # back-pressure: NATS buffers while the pool is busy

        # `vc.rpc.admission.write.<identity>`: the server lets each identity publish on its own only.
        # The bare subject is the admin's: on a closed bus no identity may publish on it (see
        # vc_security.identities); on an open bus anyone could as well write as `admin`.
        for subject in (subjects.ADMISSION_WRITE_ANY, subjects.ADMISSION_WRITE):
            sub = await ctx.nc.subscribe(subject, queue="admission", cb=enqueue)
            ctx.resources.push_async_callback(sub.unsubscribe)

        # `vc.rpc.admission.consumers.<identity>`: the consumers tenants read through (vc_admission.consumers).
        async def consumer_request(msg: Msg) -> None:
            await serve_consumer_request(ctx.nc, callers, msg)

        sub = await ctx.nc.subscribe(subjects.ADMISSION_CONSUMERS_ANY, queue="admission", cb=consumer_request)
        ctx.resources.push_async_callback(sub.unsubscribe)

        async def serve(shutdown: asyncio.Event) -> None:
            async with asyncio.TaskGroup() as tg:
                for i in range(WORKERS):
                    tg.create_task(_worker(api, callers, inbox, shutdown), name=f"write-api:{i}")

        async def synced(shutdown: asyncio.Event) -> None:
            for informer in informers:
                if not await wait_or_stop(informer.synced, shutdown):
                    return
            ctx.probes.set("caches-synced")

        workers: list[Worker] = [
            *(FnWorker(f"informer:{i.kind.__name__}", i.run) for i in informers),
            FnWorker("synced", synced),
            FnWorker("write-api", serve),
        ]
        if self.options.webhook_port:
            workers.append(webhook_worker(self.options, self.settings.kubeconfig, context, ctx.probes))
        return workers


async def _worker(api: WriteApi, callers: Callers, inbox: asyncio.Queue[Msg], shutdown: asyncio.Event) -> None:
    while not (shutdown.is_set() and inbox.empty()):
        try:
            async with asyncio.timeout(0.5):
                msg = await inbox.get()
        except TimeoutError:
            continue
        with LATENCY.time():
            identity = ADMIN if msg.subject == subjects.ADMISSION_WRITE else subjects.caller_of(msg.subject)
            reply = await _answer(api, msg.data, callers.lookup(identity) if identity else None)
        REQUESTS.labels("error" if b'"error"' in reply[:12] else "ok").inc()
        if msg.reply:
            try:
                await msg.respond(reply)
            except Exception as exc:  # the asker is gone or the connection dropped: its retry asks again
                log.warning("write_api.reply_failed", error=repr(exc))


async def _answer(api: WriteApi, data: bytes, caller: Person | None) -> bytes:
    """Handler boundary: whatever a request does, the worker answers it and lives on to serve the next."""
    try:
        return await api.handle(data, caller)
    except Exception as exc:
        log.error("write_api.request_failed", size=len(data), exc_info=exc)
        return error_reply(INTERNAL, f"admission failed on this request: {type(exc).__name__}")

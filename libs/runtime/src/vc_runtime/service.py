"""run_service(): the one main loop of every Tephra service.

Structured concurrency: one TaskGroup owns the probe server and every worker; a crashed worker crashes
the service (exit 1, one `service.crashed` line). SIGTERM/SIGINT: readiness goes false, workers stop
intake and finish in-flight work, then the exit stack drains NATS; exit 0. All of it within `grace_s`
of the signal, also while NATS is gone: the workers get the grace period less EXIT_RESERVE_S, closing
the connection is bounded (vc_bus.connection.close_within), and what is still running when the grace
period ends is left to the exit deadline (vc_runtime.exit_deadline).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog
import uvloop
from nats.aio.client import Client

from vc_bus.connection import connect
from vc_bus.events import EventPublisher, ensure_events_stream
from vc_bus.store import NatsStore
from vc_core.errors import ConfigError
from vc_core.store import ObjectStore
from vc_runtime import logging as vc_logging
from vc_runtime.event_recorder import EventRecorder, cached_uid_lookup
from vc_runtime.exit_deadline import ExitDeadline
from vc_runtime.probes import Probes, serve_probes
from vc_runtime.settings import RuntimeSettings
from vc_security.credentials import BadCredentials, ClientCredentials, load_credentials

log = structlog.get_logger(__name__)


class Worker(Protocol):
    name: str

    async def run(self, shutdown: asyncio.Event) -> None: ...


@dataclass(slots=True)
class FnWorker:
    """A worker from a coroutine function taking the shutdown event."""

    name: str
    fn: Callable[[asyncio.Event], Awaitable[None]]

    async def run(self, shutdown: asyncio.Event) -> None:
        await self.fn(shutdown)


@dataclass
class ServiceContext:
    """What the runtime opens for every service: settings, NATS, the store, events, probes."""

    settings: RuntimeSettings
    nc: Client
    store: ObjectStore
    events: EventPublisher
    probes: Probes
    resources: contextlib.AsyncExitStack
    extras: dict[str, object] = field(default_factory=dict)


class App(Protocol):
    name: str

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        """Open the service's resources (on ctx.resources) and return its workers."""
        ...


class _Stop(Exception):
    """Raised inside the task group to end it on purpose."""


async def open_store(settings: RuntimeSettings, nc: Client) -> ObjectStore:
    if settings.backend == "kube":
        # Writes go to the apiserver, reads stay on the NATS mirror that vc-kube-relay fills.
        # Imported here: only the kube backend needs vc_kube (and kubernetes-asyncio).
        from vc_kube.mirrored import open_mirrored_store

        agent = f"vc-{settings.service}"
        return await open_mirrored_store(settings.kubeconfig, nc, replicas=settings.nats_replicas, agent=agent)
    if settings.backend != "nats":
        raise ConfigError(f"--backend {settings.backend}: unknown backend")
    store = NatsStore(nc, replicas=settings.nats_replicas)
    await store.ensure()
    return store


def nats_credentials(settings: RuntimeSettings) -> ClientCredentials | None:
    """The service's NATS identity from --nats-creds/--nats-ca; a file that cannot be used is a ConfigError."""
    if not settings.nats_creds:
        return None
    try:
        return load_credentials(settings.nats_creds, ca_path=settings.nats_ca)
    except BadCredentials as exc:
        raise ConfigError(f"--nats-creds: {exc}") from None


# Of the grace period, what the workers do not get: closing the store and the NATS connection after
# them (vc_bus.connection: DRAIN_S + CLOSE_S) and the process's own exit.
EXIT_RESERVE_S = 5.0


def workers_grace_s(grace_s: float) -> float:
    """How long the workers get to finish at shutdown: the grace period less what closing needs."""
    return max(grace_s - EXIT_RESERVE_S, grace_s / 2)


async def run_service(app: App, settings: RuntimeSettings, *, deadline: ExitDeadline | None = None) -> int:
    """Run `app` until SIGTERM/SIGINT; with `deadline`, the signal also arms it (main_entry's)."""
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        shutdown.set()
        if deadline is not None:
            deadline.arm()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    probes = Probes()
    probes.require("nats", "started")
    structlog.contextvars.bind_contextvars(service=app.name, instance=settings.instance)
    log.info("service.starting", nats=settings.nats_url, backend=settings.backend)
    try:
        async with contextlib.AsyncExitStack() as resources:
            nc = await resources.enter_async_context(
                connect(
                    settings.nats_url, name=f"{app.name}:{settings.instance}", credentials=nats_credentials(settings)
                )
            )
            probes.set("nats")
            await ensure_events_stream(nc, replicas=settings.nats_replicas)
            store = await open_store(settings, nc)
            close_store = getattr(store, "aclose", None)  # the kube backend holds apiserver connections
            if close_store is not None:
                resources.push_async_callback(close_store)
            recorder = EventRecorder(
                store, component=f"vc-{app.name}", host=settings.instance, lookup_uid=cached_uid_lookup(nc)
            )
            ctx = ServiceContext(settings, nc, store, EventPublisher(nc, observer=recorder.observe), probes, resources)
            async with asyncio.TaskGroup() as tg:
                tg.create_task(
                    serve_probes(probes, host=settings.health_host, port=settings.health_port), name="probes"
                )
                tg.create_task(_watch_connection(nc, probes, shutdown), name="nats-health")
                # Waited for with the workers at shutdown: the last Events get written.
                events_task = tg.create_task(recorder.run(shutdown), name="kube-events")
                workers = list(await app.open(ctx))
                tasks = [tg.create_task(w.run(shutdown), name=w.name) for w in workers] + [events_task]
                probes.set("started")
                log.info("service.started", workers=[w.name for w in workers])
                await shutdown.wait()
                probes.mark_not_ready()
                log.info("shutdown.begin", grace_s=settings.grace_s)
                if tasks:
                    _, pending = await asyncio.wait(tasks, timeout=workers_grace_s(settings.grace_s))
                    for task in pending:
                        log.warning("shutdown.worker_hung", worker=task.get_name())
                raise _Stop
    except* _Stop:
        pass
    log.info("shutdown.done")
    if deadline is not None:
        deadline.finished(0)
    return 0


async def _watch_connection(nc: Client, probes: Probes, shutdown: asyncio.Event) -> None:
    while not shutdown.is_set():
        probes.set("nats", nc.is_connected)
        await asyncio.sleep(0.5)


# Services hold caches of 10^5 objects and allocate a few per message: at CPython's default (700, 10,
# 10) the cyclic collector runs every 700 allocations and keeps re-walking young caches. Collecting
# young objects every 100,000 allocations took a fifth off a 100,000-pod scheduling cycle.
# The middle generation is collected every 5 young collections, not 50: each object that survives a
# young collection is looked at once there either way, but 50 collections' survivors at once (millions
# of cache objects at the seeds' scale) held the GIL for 2-4 s, a stall of the whole process
# (docs/benchmarks.md). The full collection is considered as often as before (every 5,000 young ones).
GC_THRESHOLDS = (100_000, 5, 1_000)
# Every service runs on uvloop: per message, a service spends more time in the event loop (callbacks,
# futures, socket reads and writes) than in its own code, and uvloop's C loop took 14% off the CPU of
# the whole system at 10,000 gang pods (e2e benchmark, same run, stock asyncio loop for comparison).


def _leaf_exceptions(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions inside `group`, nested groups flattened, in order."""
    leaves: list[BaseException] = []
    for exc in group.exceptions:
        leaves.extend(_leaf_exceptions(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return leaves or [group]


def main_entry(app_factory: Callable[[RuntimeSettings], App], settings_factory: Callable[[], RuntimeSettings]) -> None:
    """`__main__` of every service: parse settings, configure logs, run; exit 0/1/2."""
    try:
        settings = settings_factory()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    vc_logging.configure(settings.log_level, json=settings.log_json)
    gc.set_threshold(*GC_THRESHOLDS)
    # Armed at SIGTERM, one second inside the grace period: the exit itself takes a moment.
    deadline = ExitDeadline(max(settings.grace_s - 1.0, settings.grace_s / 2))
    try:
        code = uvloop.run(run_service(app_factory(settings), settings, deadline=deadline))
    except ConfigError as exc:
        log.error("service.config_error", error=str(exc))
        sys.exit(2)
    except BaseExceptionGroup as group:
        config, rest = group.split(ConfigError)
        if config is not None and rest is None:
            log.error("service.config_error", error=str(config.exceptions[0]))
            sys.exit(2)
        # The group's own traceback ends in the task group; what failed is in its members.
        leaves = _leaf_exceptions(group)
        log.error("service.crashed", errors=[repr(e)[:300] for e in leaves[:10]], exc_info=leaves[0])
        sys.exit(1)
    except Exception:  # top level: one line with the traceback, then exit 1
        log.exception("service.crashed")
        sys.exit(1)
    sys.exit(code)

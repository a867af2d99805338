"""Run a real service app in-process against a real nats-server, with its store wrapped to record which
instance wrote which key (the "one writer per key" checks of the multi-instance tests)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tests.support import secure
from tests.support.waiting import eventually
from vc_bus.connection import connect
from vc_bus.events import EventPublisher, ensure_events_stream
from vc_bus.store import NatsStore
from vc_core.errors import Conflict
from vc_core.store import ObjectStore
from vc_proto.core import Pod
from vc_proto.kinds import KubeObject
from vc_runtime.membership import Membership
from vc_runtime.probes import Probes
from vc_runtime.service import App, ServiceContext
from vc_runtime.settings import RuntimeSettings
from vc_security.identities import SERVICE_GRANTS

ObjT = TypeVar("ObjT", bound=KubeObject)
T = TypeVar("T")
A = TypeVar("A", bound=App)


@dataclass
class WriteLog:
    writers: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    conflicts: int = 0
    # Set before the instances stop: a leaving member hands its keys over, and the heir's first pass
    # may run on a cache that lags the leaver's last writes (its compare-and-set then loses, harmlessly).
    closed: bool = False


class CountingStore:
    def __init__(self, store: ObjectStore, instance: str, log: WriteLog) -> None:
        self._store, self._instance, self._log = store, instance, log

    def _record(self, kind: str, name: str) -> None:
        if self._log.closed:
            return
        self._log.writers[(kind, name)].add(self._instance)

    async def _counted(self, op: Awaitable[T]) -> T:
        try:
            return await op
        except Conflict:
            self._log.conflicts += 0 if self._log.closed else 1
            raise

    async def get(self, kind: type[ObjT], namespace: str | None, name: str) -> ObjT:
        return await self._store.get(kind, namespace, name)

    async def create(self, obj: ObjT) -> ObjT:
        self._record(type(obj).__name__, obj.metadata.name or "")
        return await self._counted(self._store.create(obj))

    async def update(self, obj: ObjT) -> ObjT:
        self._record(type(obj).__name__, obj.metadata.name or "")
        return await self._counted(self._store.update(obj))

    async def bind(self, pod: Pod, node: str, *, annotations: Mapping[str, str] | None = None) -> None:
        self._record("Pod", pod.metadata.name or "")
        await self._counted(self._store.bind(pod, node, annotations=annotations))

    async def delete(self, kind: type[ObjT], namespace: str | None, name: str, **kw: object) -> None:
        self._record(kind.__name__, name)
        await self._counted(self._store.delete(kind, namespace, name, **kw))  # type: ignore[arg-type]

    async def list(self, kind: type[ObjT], namespace: str | None = None) -> tuple[list[ObjT], int]:
        return await self._store.list(kind, namespace)

    def watch(self, kind: type[ObjT], **kw: object) -> AsyncIterator[object]:
        return self._store.watch(kind, **kw)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def run_app(
    factory: Callable[[RuntimeSettings], A],
    service: str,
    url: str,
    instance: str,
    log: WriteLog | None = None,
    **flags: Any,
) -> AsyncIterator[A]:
    """The app's workers in this event loop, until the block ends (then they get the shutdown signal).
    `flags` are the service's own flags by argparse dest (`schedule_period=0.2`), as its options read them."""
    settings = RuntimeSettings(service=service, nats_url=url, instance=instance, flags=flags)
    bus = secure.current()
    credentials = bus.credentials(service) if bus is not None and service in SERVICE_GRANTS else None
    async with contextlib.AsyncExitStack() as resources:
        nc = await resources.enter_async_context(connect(url, name=instance, credentials=credentials))
        await ensure_events_stream(nc)
        store = NatsStore(nc)
        await store.ensure()
        wrapped = CountingStore(store, instance, log or WriteLog())
        app = factory(settings)
        ctx = ServiceContext(settings, nc, wrapped, EventPublisher(nc), Probes(), resources)  # type: ignore[arg-type]
        workers = await app.open(ctx)
        shutdown = asyncio.Event()
        async with asyncio.TaskGroup() as tg:
            for worker in workers:
                tg.create_task(worker.run(shutdown), name=worker.name)
            try:
                yield app
            finally:
                shutdown.set()


async def memberships_settled(*apps: App, timeout: float = 30.0) -> None:  # noqa: ASYNC109 - a poll's bound
    """Until each app's membership sees all of them and may claim keys (its settle period over): from then on
    the instances share the keys between them, each key with one writer."""

    def membership(app: App) -> Membership | None:
        found = getattr(app, "membership", None)
        return found if isinstance(found, Membership) else None

    def all_see_all() -> bool:
        return all((m := membership(app)) is not None and len(m.members) == len(apps) for app in apps)

    await eventually(all_see_all, timeout=timeout, what=f"{len(apps)} instances see each other")
    async with asyncio.timeout(timeout):
        for app in apps:
            found = membership(app)
            assert found is not None
            await found.wait_settled()

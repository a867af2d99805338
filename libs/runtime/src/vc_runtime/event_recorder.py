"""SHELL: a service's Kubernetes Event recorder (client-go's EventRecorder, over the store port).

Every domain event a service publishes is offered to `observe` (vc_bus.events.EventPublisher calls it
once the event is stored); the few that stand for Kubernetes Events (vc_core.kube_events) are
correlated (aggregated, rate-limited) and queued; `run` writes them through the store: NATS KV with
`--backend nats`, the apiserver's core/v1 Events with `--backend kube`.

A write is an Event named after what it says (`event_name`): created with `count` 1, or, for a repeat,
read and written back with `count` and `lastTimestamp` advanced (compare-and-set). When a create finds
the Event already there, an earlier life of this service said it: the fact is not new and is not
counted again (unless a verdict's why changed meanwhile), so a restart does not re-emit anything.

Events are best effort, as client-go's are: the state itself is in the store. A write that keeps
failing is dropped with a log line; at most MAX_PENDING Events wait to be written (the oldest is
dropped first); observing never blocks the caller. A verdict waits VERDICT_SETTLE_S first, and is
not written at all when the PodGroup is scheduled meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Final

import msgspec
import structlog
from nats.aio.client import Client
from prometheus_client import Counter

from vc_bus.store import NatsStore
from vc_core.errors import AlreadyExists, NotFound, TemporaryError
from vc_core.kube_events import (
    EventCorrelator,
    EventIntent,
    Occurrence,
    event_name,
    intents_for,
    verdicts_ended_by,
)
from vc_core.retry import RetryPolicy
from vc_core.store import ObjectStore
from vc_core.times import rfc3339_from_epoch
from vc_proto.events import DomainEvent
from vc_proto.kinds import KINDS
from vc_proto.kube_event import Event, EventSource, ObjectReference
from vc_proto.meta import ObjectMeta

log = structlog.get_logger(__name__)

MAX_PENDING: Final = 1024
# An Event is best effort, as client-go's: a write the store cannot take now (unreachable, or a count
# another instance raised meanwhile: a Conflict) is tried again a few times, then dropped and counted.
WRITE_ATTEMPTS: Final = 4
RETRY_S: Final = 0.5
FLUSH_ON_STOP_S: Final = 2.0
# A verdict is written once it has stood this long: most gangs wait a moment for their pods or their
# turn and are then scheduled; an Event for each would be two writes per job (vc_core.kube_events).
VERDICT_SETTLE_S: Final = 3.0
# Events about cluster-scoped objects (Queues) live in `default`, as Kubernetes puts them.
CLUSTER_SCOPED_NAMESPACE: Final = "default"

RECORDED = Counter(
    "tephra_kube_events_total",
    "Kubernetes Events this process recorded, by outcome (created, counted, known: written before this"
    " process started, object_gone, verdict_ended: scheduled before it settled, dropped_spam, dropped_full,"
    " failed)",
    ["outcome"],
)

# (kind, namespace, name) -> the object's uid, or None when it is gone: read from the shared cache.
UidLookup = Callable[[str, str | None, str], Awaitable[str | None]]


def cached_uid_lookup(nc: Client) -> UidLookup:
    """Uids from the shared cache (the KV buckets: the store itself with `--backend nats`, the relay's
    mirror with `--backend kube`), so naming a Job costs no apiserver request and no extra permission."""
    cache = NatsStore(nc)

    async def lookup(kind: str, namespace: str | None, name: str) -> str | None:
        row = KINDS.get(kind)
        if row is None:
            return None
        try:
            return (await cache.get(row.type, namespace if row.namespaced else None, name)).metadata.uid
        except NotFound:
            return None

    return lookup


@dataclass(slots=True)
class _Pending:
    occurrence: Occurrence
    unwritten: int  # occurrences not yet written

    @property
    def written_before(self) -> bool:
        return self.occurrence.count > self.unwritten


class EventRecorder:
    def __init__(
        self,
        store: ObjectStore,
        *,
        component: str,
        host: str,
        lookup_uid: UidLookup | None = None,
        clock: Callable[[], float] = time.time,
        max_pending: int = MAX_PENDING,
        retry_s: float = RETRY_S,
        settle_s: float = VERDICT_SETTLE_S,
    ) -> None:
        self._store = store
        self._component, self._host = component, host
        self._lookup_uid = lookup_uid
        self._correlator = EventCorrelator(component, clock=clock)
        self._ready: OrderedDict[tuple[str, ...], _Pending] = OrderedDict()
        # Verdicts wait `settle_s` (loop time) before they are written, in the order they came.
        self._settling: OrderedDict[tuple[str, ...], tuple[float, _Pending]] = OrderedDict()
        self._max_pending = max_pending
        self._retry = RetryPolicy((TemporaryError,), base_s=retry_s, cap_s=4 * retry_s, attempts=WRITE_ATTEMPTS)
        self._settle_s = settle_s
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    # -- the caller's side: never blocks --------------------------------------------------------------
    def observe(self, event: DomainEvent) -> None:
        ended = verdicts_ended_by(event)
        if ended:
            self._end_verdicts(set(ended))
        for intent in intents_for(event):
            self.record(intent)

    def record(self, intent: EventIntent) -> None:
        occurrence = self._correlator.correlate(intent)
        if occurrence is None:
            RECORDED.labels("dropped_spam").inc()
            return
        key = occurrence.intent.key()
        if key in self._settling:
            due, settling = self._settling[key]
            self._settling[key] = (due, _Pending(occurrence, settling.unwritten + 1))
        elif intent.verdict and self._settle_s > 0 and key not in self._ready:
            due = asyncio.get_running_loop().time() + self._settle_s
            self._settling[key] = (due, _Pending(occurrence, 1))
        else:
            ready = self._ready.pop(key) if key in self._ready else None
            self._ready[key] = _Pending(occurrence, (ready.unwritten if ready else 0) + 1)
        while len(self._ready) + len(self._settling) > self._max_pending:
            if self._settling:
                self._settling.popitem(last=False)
            else:
                self._ready.popitem(last=False)
            RECORDED.labels("dropped_full").inc()
            log.warning("kube_event.dropped", cause="too many pending")
        self._idle.clear()
        self._wake.set()

    def _end_verdicts(self, objects: set[tuple[str, str | None, str]]) -> None:
        for key, (_, pending) in list(self._settling.items()):
            i = pending.occurrence.intent.involved
            if (i.kind, i.namespace, i.name) in objects:
                del self._settling[key]
                self._correlator.forget(pending.occurrence.intent)
                RECORDED.labels("verdict_ended").inc()
        if not self._ready and not self._settling:
            self._idle.set()

    async def written(self) -> None:
        """Until every Event recorded so far is written, given up or ended: for tests."""
        await self._idle.wait()

    # -- the writer ----------------------------------------------------------------------------------
    async def run(self, shutdown: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        while not shutdown.is_set():
            while self._settling and next(iter(self._settling.values()))[0] <= loop.time():
                key, (_, settled) = self._settling.popitem(last=False)
                self._ready[key] = settled
            if self._ready:
                _, pending = self._ready.popitem(last=False)
                await self._write_with_retry(pending)
                continue
            if not self._settling:
                self._idle.set()
            self._wake.clear()
            timeout = next(iter(self._settling.values()))[0] - loop.time() if self._settling else None
            stop = asyncio.ensure_future(shutdown.wait())
            wake = asyncio.ensure_future(self._wake.wait())
            await asyncio.wait({stop, wake}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for waiter in (stop, wake):
                waiter.cancel()
        # Stopping: what was recorded just before (the last verdicts too) gets a moment to be written.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(FLUSH_ON_STOP_S):
                for key, (_, settled) in list(self._settling.items()):
                    self._ready.setdefault(key, settled)
                self._settling.clear()
                while self._ready:
                    _, pending = self._ready.popitem(last=False)
                    await self._write_with_retry(pending)
        self._idle.set()

    async def _write_with_retry(self, pending: _Pending) -> None:
        try:
            RECORDED.labels(await self._retry.call(lambda: self._write(pending), sleep=asyncio.sleep)).inc()
        except Exception as exc:  # store unreachable, forbidden, ...: best effort, as client-go
            RECORDED.labels("failed").inc()
            log.warning("kube_event.not_written", reason=pending.occurrence.intent.reason, error=repr(exc))

    async def _write(self, pending: _Pending) -> str:
        intent = await self._with_uid(pending.occurrence.intent)
        if intent is None:
            return "object_gone"
        occurrence = replace(pending.occurrence, intent=intent)
        name = event_name(self._component, intent)
        if not pending.written_before:
            try:
                await self._store.create(self._new_event(name, occurrence, count=pending.unwritten))
                return "created"
            except AlreadyExists:
                # An earlier life of this service said it: not new. Repeats seen since the first count,
                # and so does a verdict whose why changed meanwhile.
                if pending.unwritten == 1 and await self._says(name, intent):
                    return "known"
                return await self._count(name, occurrence, max(pending.unwritten - 1, 1))
        return await self._count(name, occurrence, pending.unwritten)

    async def _count(self, name: str, occurrence: Occurrence, more: int) -> str:
        """Raise the stored Event's count by `more`. A Conflict (another instance of this service
        counted it meanwhile) goes to the write's retry, which reads it again and counts on top."""
        namespace = self._namespace(occurrence.intent)
        try:
            stored = await self._store.get(Event, namespace, name)
        except NotFound:  # expired (or deleted) meanwhile: say it again
            await self._store.create(self._new_event(name, occurrence, count=more))
            return "created"
        counted = msgspec.structs.replace(
            stored,
            count=(stored.count or 1) + more,
            last_timestamp=rfc3339_from_epoch(occurrence.last_seen),
            message=occurrence.intent.message,  # a combined Event or a verdict shows the latest
        )
        await self._store.update(counted)
        return "counted"

    async def _says(self, name: str, intent: EventIntent) -> bool:
        try:
            stored = await self._store.get(Event, self._namespace(intent), name)
        except NotFound:
            return False
        return stored.message == intent.message

    async def _with_uid(self, intent: EventIntent) -> EventIntent | None:
        involved = intent.involved
        if involved.uid or self._lookup_uid is None:
            return intent
        uid = await self._lookup_uid(involved.kind, involved.namespace, involved.name)
        if uid is None:
            return None
        return replace(intent, involved=replace(involved, uid=uid))

    def _namespace(self, intent: EventIntent) -> str:
        return intent.involved.namespace or CLUSTER_SCOPED_NAMESPACE

    def _new_event(self, name: str, occurrence: Occurrence, *, count: int) -> Event:
        intent = occurrence.intent
        involved = intent.involved
        row = KINDS.get(involved.kind)
        return Event(
            api_version="v1",
            metadata=ObjectMeta(name=name, namespace=self._namespace(intent)),
            involved_object=ObjectReference(
                kind=involved.kind,
                namespace=involved.namespace,
                name=involved.name,
                uid=involved.uid,
                api_version=row.api_version if row else None,
            ),
            reason=intent.reason,
            message=intent.message,
            source=EventSource(component=self._component, host=self._host),
            first_timestamp=rfc3339_from_epoch(occurrence.first_seen),
            last_timestamp=rfc3339_from_epoch(occurrence.last_seen),
            count=count,
            type=intent.type,
            reporting_component=self._component,
            reporting_instance=self._host,
        )

"""Which events a reader asks for: by namespace, job, queue and kind. Pure.

The namespace and the job are in an event's subject (`vc.evt.<resource>.<namespace>.<name>`; every
event about a job, its tasks, pods and PodGroup is on the job's subject), so the server selects them
and, for a tenant, checks them against its permissions. Kind and queue are in the event itself and
are selected by the reader: a queue selects the facts about the queue and those of the jobs in it,
by the event's `queue` field or, where the publisher did not know it (the scheduler's pod events),
by the queue of the same job seen earlier (`JobQueues`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from vc_core.errors import InvalidObject
from vc_proto import subjects
from vc_proto.events import DomainEvent
from vc_validation.names import dns1123_label_errors, dns1123_subdomain_errors

# What an event can be about (DomainEvent.kind).
EVENT_KINDS: Final = ("Job", "Task", "Pod", "PodGroup", "Queue", "Node")
_BY_LOWER: Final = {kind.lower(): kind for kind in EVENT_KINDS}
MAX_JOBS_REMEMBERED: Final = 100_000


@dataclass(frozen=True, slots=True)
class EventSelection:
    namespace: str | None = None
    job: str | None = None
    queue: str | None = None
    kinds: frozenset[str] | None = None  # None: every kind

    @property
    def subject(self) -> str:
        """The filter subject the server selects on (and checks a tenant's permissions against)."""
        if self.job is not None:
            return subjects.event_filter("job", self.namespace, self.job)
        if self.namespace is not None:
            return subjects.event_filter("*", self.namespace)
        return f"{subjects.EVENTS_PREFIX}.>"

    def accepts(self, event: DomainEvent, queue: str | None) -> bool:
        """Whether `event` (whose job is in `queue`, if known) is selected, beyond its subject."""
        if self.kinds is not None and event.kind not in self.kinds:
            return False
        if self.queue is None:
            return True
        if event.kind == "Queue":
            return event.name == self.queue
        return queue == self.queue


def select_events(
    *,
    namespace: str | None = None,
    job: str | None = None,
    queue: str | None = None,
    kinds: Iterable[str] | None = None,
) -> EventSelection:
    """The selection these arguments mean; InvalidObject naming the argument and its rule otherwise."""
    if namespace is not None and (errors := dns1123_label_errors(namespace)):
        raise InvalidObject("namespace", "dns1123-label", f"{namespace!r}: {'; '.join(errors)}")
    if job is not None:
        if errors := dns1123_subdomain_errors(job):
            raise InvalidObject("job", "dns1123-subdomain", f"{job!r}: {'; '.join(errors)}")
        if namespace is None:
            raise InvalidObject("job", "needs-namespace", "a job is named within a namespace: give namespace too")
    if queue is not None and (errors := dns1123_subdomain_errors(queue)):
        raise InvalidObject("queue", "dns1123-subdomain", f"{queue!r}: {'; '.join(errors)}")
    return EventSelection(namespace, job, queue, None if kinds is None else _kinds(kinds))


def _kinds(kinds: Iterable[str]) -> frozenset[str]:
    if isinstance(kinds, str):
        kinds = [k for k in kinds.split(",") if k.strip()]
    found = set()
    for kind in kinds:
        canonical = _BY_LOWER.get(str(kind).strip().lower())
        if canonical is None:
            raise InvalidObject("kinds", "enum", f"{str(kind)[:64]!r} is not one of {', '.join(EVENT_KINDS)}")
        found.add(canonical)
    if not found:
        raise InvalidObject("kinds", "non-empty", f"name at least one of {', '.join(EVENT_KINDS)}, or leave it out")
    return frozenset(found)


class JobQueues:
    """The queue of each job a reader has seen an event of (a job's queue never changes), so the events
    that do not say it (the scheduler's) are placed by those that do (the job controller's, which come
    first: it creates the job's PodGroup and pods)."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str | None, str], str] = {}

    def queue_of(self, event: DomainEvent) -> str | None:
        if event.job is None:
            return event.queue
        key = (event.namespace, event.job)
        if event.queue is not None:
            if len(self._queues) >= MAX_JOBS_REMEMBERED and key not in self._queues:
                self._queues.pop(next(iter(self._queues)))  # the oldest job: its events are long past
            self._queues[key] = event.queue
            return event.queue
        return self._queues.get(key)

    def remember(self, namespace: str | None, job: str, queue: str | None) -> None:
        if queue is not None:
            self._queues[(namespace, job)] = queue

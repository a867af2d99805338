"""PURE: which facts become Kubernetes Events, and how repeats are aggregated and rate-limited.

Services publish domain events on the history stream (vc_proto.events); a few of them are what
Volcano reports as Kubernetes Events: `Unschedulable` on a PodGroup (with the why-message) and
`PodGroupPending` on its Job (once the verdict stood a moment: `verdicts_ended_by`), `ExecuteAction`,
`CommandIssued`, `PluginError`, `FailedCreate` on Jobs, queue state changes on Queues, evictions on
Pods. `intents_for` is that table.

`EventCorrelator` is client-go's EventCorrelator without its I/O:
- a repeat of the same involvedObject + type + reason + message is one Event whose `count` and
  `lastTimestamp` grow (`firstTimestamp` stays); a verdict (Unschedulable, PodGroupPending) is one
  Event per object whatever its message, which is the latest why;
- more than SIMILAR_MAX distinct messages for the same object and reason within SIMILAR_WINDOW_S are
  combined into one Event "(combined from similar events): <latest message>";
- a spam filter (a token bucket per source component and object: SPAM_BURST at once, then one per
  SPAM_REFILL_S) drops the rest, so a flapping object cannot flood the store.

Names are derived from content (`event_name`), not from the time as client-go does: an Event recorded
again by a restarted process lands on the Event already stored instead of a new one (Volcano #3745).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Final, Generic, TypeVar

from vc_proto.events import DomainEvent
from vc_proto.kube_event import NORMAL, WARNING

# client-go's defaults (k8s.io/client-go/tools/record/events_cache.go).
SPAM_BURST: Final = 25
SPAM_REFILL_S: Final = 300.0
SIMILAR_MAX: Final = 10
SIMILAR_WINDOW_S: Final = 600.0
CACHE_SIZE: Final = 4096
# Messages come from conditions and errors: bounded, as everything written is.
MAX_MESSAGE: Final = 1024
COMBINED_PREFIX: Final = "(combined from similar events): "
MAX_NAME: Final = 253
_DIGEST_CHARS: Final = 16

Clock = Callable[[], float]
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Involved:
    """The object an Event is about (core/v1 ObjectReference)."""

    kind: str
    namespace: str | None
    name: str
    uid: str | None = None


@dataclass(frozen=True, slots=True)
class EventIntent:
    """What a service wants to say about an object, before correlation."""

    involved: Involved
    type: str
    reason: str
    message: str
    # Many similar messages combined into one Event: its identity leaves the message out.
    combined: bool = False
    # A verdict (why a gang waits) is one Event per object: a new why counts on it and becomes its
    # message. The why carries figures that move with the cluster ("cluster idle 152600m"); one Event
    # per figure would say "unschedulable" again and again.
    verdict: bool = False

    def key(self) -> tuple[str, ...]:
        """The identity of a repeat (uid included: a re-created object's Events are its own)."""
        i = self.involved
        said = "" if self.verdict else COMBINED_PREFIX if self.combined else self.message
        return (i.kind, i.namespace or "", i.name, i.uid or "", self.type, self.reason, said)


def bounded(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


# -- which facts are Events -----------------------------------------------------------------------
# Queue state -> Volcano's queue controller reason.
_QUEUE_REASONS: Final = {"Open": "OpenQueue", "Closing": "CloseQueue", "Closed": "CloseQueue"}
# (domain kind, domain reason) -> (Event type, Event reason); the message is the domain event's.
_DIRECT: Final[dict[tuple[str, str], tuple[str, str]]] = {
    ("PodGroup", "Unschedulable"): (WARNING, "Unschedulable"),
    ("Job", "ExecuteAction"): (NORMAL, "ExecuteAction"),
    ("Job", "CommandIssued"): (NORMAL, "CommandIssued"),
    ("Job", "PluginError"): (WARNING, "PluginError"),
    ("Job", "FailedCreate"): (WARNING, "FailedCreate"),
    ("Queue", "CommandIssued"): (NORMAL, "CommandIssued"),
    ("Pod", "PodEvicted"): (WARNING, "Evict"),
}
# Who evicts pods (a domain event's `source` is "<service>/<instance>"): preemption and reclaim, and
# the simulated node lifecycle of a NotReady node.
_EVICTORS: Final = frozenset({"scheduler", "node-sim"})


def component_of(source: str) -> str:
    """The service's one name, as its Kubernetes Events give it (`vc-scheduler`), for a domain event's
    `source` ("scheduler/scheduler-0", "gc"): people see one source name per service, wherever they look."""
    service = source.partition("/")[0]
    return service if not service or service.startswith("vc-") else f"vc-{service}"


def intents_for(event: DomainEvent) -> tuple[EventIntent, ...]:
    """The Kubernetes Events a domain event stands for (most stand for none: pod starts, binds and
    phase changes are history, and an Event per pod transition would double the writes per pod)."""
    # Every published fact passes here (each bind, on the scheduler's hot path): look up first, build
    # the Event's parts only for the few that stand for one.
    if event.kind == "Queue" and event.reason == "PhaseChanged":
        reason = _QUEUE_REASONS.get(event.phase or "")
        if not reason:
            return ()
        involved = Involved(event.kind, event.namespace, event.name, event.uid)
        return (EventIntent(involved, NORMAL, reason, bounded(event.message or event.reason)),)
    direct = _DIRECT.get((event.kind, event.reason))
    if direct is None:
        return ()
    if event.kind == "Pod" and event.source.partition("/")[0] not in _EVICTORS:
        return ()  # the job controller only saw the eviction: the evictor says it
    involved = Involved(event.kind, event.namespace, event.name, event.uid)
    message = bounded(event.message or event.reason)
    verdict = direct[1] == "Unschedulable"
    intents = [EventIntent(involved, direct[0], direct[1], message, verdict=verdict)]
    if verdict and event.kind == "PodGroup" and event.job:
        # Volcano's job controller says it on the Job too: "PodGroup <ns>:<job> unschedulable, reason: ..."
        job = Involved("Job", event.namespace, event.job)
        pending = f"PodGroup {event.namespace}:{event.job} unschedulable, reason: {event.message or event.reason}"
        intents.append(EventIntent(job, WARNING, "PodGroupPending", bounded(pending), verdict=True))
    return tuple(intents)


def verdicts_ended_by(event: DomainEvent) -> tuple[tuple[str, str | None, str], ...]:
    """The objects (kind, namespace, name) whose waiting verdicts a fact ends: a PodGroup that got
    scheduled was only briefly unschedulable (its pods not created yet, its turn not come), and a
    verdict that short is not worth an Event (the history has it), nor two writes per job."""
    if event.kind != "PodGroup" or event.reason != "Scheduled":
        return ()
    ended: tuple[tuple[str, str | None, str], ...] = (("PodGroup", event.namespace, event.name),)
    return ended + ((("Job", event.namespace, event.job),) if event.job else ())


# -- names ----------------------------------------------------------------------------------------
def event_name(component: str, intent: EventIntent) -> str:
    """`<object name>.<digest of what is said>`: the same fact from the same component, in any life of
    the process, names the same Event."""
    digest = hashlib.sha256("\x00".join((component, *intent.key())).encode()).hexdigest()[:_DIGEST_CHARS]
    prefix = intent.involved.name[: MAX_NAME - _DIGEST_CHARS - 1].rstrip("-.")  # still a DNS subdomain
    return f"{prefix}.{digest}"


# -- correlation ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Occurrence:
    """The Event to write after correlation: `count` occurrences seen by this process so far."""

    intent: EventIntent
    count: int
    first_seen: float
    last_seen: float

    @property
    def first_in_this_process(self) -> bool:
        return self.count == 1


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


class _Lru(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = size

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def pop(self, key: K) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


class EventCorrelator:
    def __init__(
        self,
        component: str,
        *,
        clock: Clock,
        burst: int = SPAM_BURST,
        refill_s: float = SPAM_REFILL_S,
        similar_max: int = SIMILAR_MAX,
        similar_window_s: float = SIMILAR_WINDOW_S,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self.component = component
        self._clock = clock
        self._burst, self._refill_s = burst, refill_s
        self._similar_max, self._similar_window_s = similar_max, similar_window_s
        self._spam: _Lru[tuple[str, ...], _Bucket] = _Lru(cache_size)
        self._similar: _Lru[tuple[str, ...], _Similar] = _Lru(cache_size)
        self._seen: _Lru[tuple[str, ...], Occurrence] = _Lru(cache_size)

    def correlate(self, intent: EventIntent) -> Occurrence | None:
        """The occurrence to write, or None when the spam filter drops it."""
        now = self._clock()
        if not self._allow(intent, now):
            return None
        intent = self._combine_similar(intent, now)
        key = intent.key()
        before = self._seen.get(key)
        if before is None:
            occurrence = Occurrence(intent, 1, now, now)
        else:
            occurrence = replace(before, intent=intent, count=before.count + 1, last_seen=now)
        self._seen.put(key, occurrence)
        return occurrence

    def forget(self, intent: EventIntent) -> None:
        """`intent` was never written (a verdict that ended before it settled): its next occurrence is
        the first again."""
        self._seen.pop(intent.key())

    def _allow(self, intent: EventIntent, now: float) -> bool:
        i = intent.involved
        key = (self.component, i.kind, i.namespace or "", i.name, i.uid or "")
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = _Bucket(float(self._burst), now)
        else:
            refilled = (now - bucket.at) / self._refill_s
            bucket = _Bucket(min(float(self._burst), bucket.tokens + refilled), now)
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        self._spam.put(key, bucket)
        return allowed

    def _combine_similar(self, intent: EventIntent, now: float) -> EventIntent:
        """client-go's EventAggregator: the same object and reason with ever new messages (a count in
        the message, a changing node list) become one Event once there are too many of them."""
        i = intent.involved
        key = (i.kind, i.namespace or "", i.name, i.uid or "", intent.type, intent.reason)
        similar = self._similar.get(key)
        if similar is None or now - similar.last > self._similar_window_s:
            similar = _Similar()
        similar.messages.add(intent.message)
        similar.last = now
        self._similar.put(key, similar)
        if intent.verdict or len(similar.messages) <= self._similar_max:
            return intent  # a verdict is one Event already
        return replace(intent, message=bounded(COMBINED_PREFIX + intent.message), combined=True)

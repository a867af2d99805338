"""Domain events: facts in the past tense, published on the VC_EVT stream and kept after objects go.

One flat record, like a Kubernetes Event but richer, so a job's whole history (job, task, pod and
scheduler events) reads as one ordered list. Events about a job's tasks, pods and PodGroup are
published on the job's subject (`vc.evt.job.<ns>.<job>`), so one filter gives its whole history.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Final

from vc_proto.base import Wire
from vc_proto.batch import Job

# `reason` values (CamelCase, stable).
PHASE_CHANGED: Final = "PhaseChanged"
POD_CREATED: Final = "PodCreated"
POD_BOUND: Final = "PodBound"
POD_STARTED: Final = "PodStarted"
POD_EXITED: Final = "PodExited"
POD_DELETED: Final = "PodDeleted"
POD_EVICTED: Final = "PodEvicted"
UNSCHEDULABLE: Final = "Unschedulable"
SCHEDULED: Final = "Scheduled"
ACTION_EXECUTED: Final = "ExecuteAction"
COMMAND_ISSUED: Final = "CommandIssued"


class DomainEvent(Wire, frozen=True, kw_only=True):
    id: str
    occurred_at: str
    source: str
    # The object the fact is about: Job, Task, Pod, PodGroup, Queue, Node.
    kind: str
    namespace: str | None = None
    name: str
    reason: str
    message: str | None = None
    job: str | None = None
    task: str | None = None
    uid: str | None = None
    phase: str | None = None
    previous_phase: str | None = None
    exit_code: int | None = None
    node: str | None = None
    correlation_id: str | None = None
    # The queue of the job the fact belongs to (its `spec.queue`), where the publisher knows it: a queue
    # filter of a reader selects on it (vc_cli.sdk.selection).
    queue: str | None = None


# One message on an event subject carries one DomainEvent (a JSON object) or, when a publisher batches
# what one step of its work produced, several (a JSON array, in the order they happened). Readers accept
# both: single events keep the wire format they always had.
EventMessage = DomainEvent | list[DomainEvent]
MAX_EVENTS_PER_MESSAGE: Final = 256


_ID_NAMESPACE: Final = uuid.NAMESPACE_URL.bytes


def event_id(*parts: object) -> str:
    """The one id scheme for domain events: a name-based UUID (v5, in the URL namespace) of what
    identifies the fact, as 32 hex digits. The same fact published again (a retry, or a restarted
    service redoing its work) gets the same id, which the stream's duplicate window drops; two different
    facts never share one.

    RFC 4122's steps on the SHA-1 digest, written out: `uuid.uuid5(...).hex` gives the same digits but
    builds a UUID object on the way, which costs as much again, once per pod in the scheduler's binder."""
    digest = bytearray(hashlib.sha1(_ID_NAMESPACE + "/".join(str(part) for part in parts).encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    return digest.hex()


def job_event(
    job: Job,
    *,
    source: str,
    reason: str,
    message: str,
    occurred_at: str,
    phase: str | None = None,
    identity: tuple[object, ...] = (),
) -> DomainEvent:
    """A fact about a whole job (not one of its tasks or pods): identified by who says it, the job's uid,
    the reason and `identity` (what else tells two such facts apart)."""
    meta = job.metadata
    return DomainEvent(
        id=event_id(source, meta.uid, reason, *identity),
        occurred_at=occurred_at,
        source=source,
        kind="Job",
        namespace=meta.namespace,
        name=meta.name or "",
        job=meta.name,
        uid=meta.uid,
        reason=reason,
        message=message,
        phase=phase,
        queue=job.spec.queue if job.spec else None,
    )

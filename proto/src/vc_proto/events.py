"""Domain events: facts in the past tense, published on the VC_EVT stream and kept after objects go.

One flat record, like a Kubernetes Event but richer, so a job's whole history (job, task, pod and
scheduler events) reads as one ordered list. Events about a job's tasks, pods and PodGroup are
published on the job's subject (`vc.evt.job.<ns>.<job>`), so one filter gives its whole history.
"""

from __future__ import annotations

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


def event_id(*parts: object) -> str:
    """The one id scheme for domain events: a name-based UUID (v5) of what identifies the fact. The same
    fact published again (a retry, or a restarted service redoing its work) gets the same id, which the
    stream's duplicate window drops; two different facts never share one."""
    return uuid.uuid5(uuid.NAMESPACE_URL, "/".join(str(part) for part in parts)).hex


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

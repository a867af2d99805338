"""SHELL: the scheduler's domain events on a job's history (a pod bound or evicted, a PodGroup's verdict).

History is best effort here: the state itself is in the store, so a publish that fails is logged and
dropped. An event's id is derived from what it says, so a retried write publishes the same event.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import structlog

from vc_bus.events import EventBatcher, EventPublisher
from vc_core.times import rfc3339_from_epoch
from vc_proto.core import Pod
from vc_proto.events import DomainEvent, event_id

log = structlog.get_logger(__name__)
Publish = Callable[[DomainEvent], Awaitable[object]]


_last_stamp: tuple[int, str] = (-1, "")


def timestamp() -> str:
    """Now, as the store's timestamps are written (RFC 3339, seconds, UTC). Formatted once per second:
    every bind event and status write asks, and strftime is most of an event's cost."""
    global _last_stamp
    second = int(time.time())
    if _last_stamp[0] != second:
        _last_stamp = (second, rfc3339_from_epoch(second))
    return _last_stamp[1]


# A gang's binds are written together but acknowledged one fsync after another: a short window
# gathers them (and other gangs' and verdicts of the same moment) into one write per job. Only the
# first event of a window waits for it (and for the write); the others return at once: the history is
# best effort here, the bind itself is already stored.
BATCH_WINDOW_S = 0.02


def batched(publish: Publish) -> Publish:
    """`publish`, batching events that come close together into one write per job, when it is an
    EventPublisher's `publish` (the service passes that); any other callable (tests) is used as it is."""
    publisher = getattr(publish, "__self__", None)
    if isinstance(publisher, EventPublisher) and getattr(publish, "__name__", "") == "publish":
        return EventBatcher(publisher.publish_batch, window_s=BATCH_WINDOW_S, followers_wait=False).publish
    return publish


class SchedulerEvents:
    def __init__(self, publish: Publish, *, source: str) -> None:
        self._publish = batched(publish)
        self._source = source

    async def pod(self, pod: Pod, reason: str, message: str, *, node: str | None) -> None:
        labels = pod.metadata.labels or {}
        await self.publish(
            kind="Pod",
            namespace=pod.metadata.namespace,
            name=pod.metadata.name or "",
            reason=reason,
            message=message,
            job=labels.get("volcano.sh/job-name"),
            task=labels.get("volcano.sh/task-spec"),
            uid=pod.metadata.uid,
            node=node,
        )

    async def publish(
        self,
        *,
        kind: str,
        name: str,
        reason: str,
        namespace: str | None = None,
        message: str | None = None,
        job: str | None = None,
        task: str | None = None,
        uid: str | None = None,
        phase: str | None = None,
        previous_phase: str | None = None,
        node: str | None = None,
    ) -> None:
        event = DomainEvent(
            id=event_id(uid, reason, message, phase, node),
            occurred_at=timestamp(),
            source=self._source,
            kind=kind,
            namespace=namespace,
            name=name,
            reason=reason,
            message=message,
            job=job,
            task=task,
            uid=uid,
            phase=phase,
            previous_phase=previous_phase,
            node=node,
        )
        try:
            await self._publish(event)
        except Exception as exc:  # history is best effort here; the state itself is in the store
            log.info("event.publish_failed", error=repr(exc), at=time.time())

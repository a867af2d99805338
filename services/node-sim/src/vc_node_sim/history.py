"""What node-sim tells the history about its pods' transitions, and what it tells again after a restart.

A transition is written first (the pod's status), then published (its event). A process killed between
the two leaves the status stored and the event unpublished, and a restarted node-sim finds nothing left
to do for that pod. So at its first sync it publishes again the events of the transitions the stored
pods show were made within `REPUBLISH_WITHIN_S`: an event's id is derived from the fact it records
(`vc_proto.events.event_id`), and the events stream drops the second copy of one already published
(its duplicate window, 120 s, is longer than `REPUBLISH_WITHIN_S`). An event lost by a node-sim that
stayed down longer than that stays lost, and so does an eviction's (its pod is deleted: nothing stored
says it happened).

A publish that fails after the status is stored is retried (`retried`): nothing would publish the event
later, the pod's next step being decided from its new status.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from vc_core.retry import RetryPolicy
from vc_core.times import rfc3339_from_epoch
from vc_node_sim.logic import parse_time
from vc_proto import events as ev
from vc_proto.core import Pod
from vc_proto.events import DomainEvent

log = structlog.get_logger(__name__)

REPUBLISH_WITHIN_S = 100.0  # under the events stream's duplicate window (vc_bus.events: 120 s)
JOB_NAME_LABEL = "volcano.sh/job-name"
PUBLISH_RETRY = RetryPolicy((Exception,), base_s=0.2, cap_s=1.6, attempts=5)

PublishBatch = Callable[[list[DomainEvent]], Awaitable[object]]


def retried(publish_batch: PublishBatch) -> PublishBatch:
    """`publish_batch` retried as the same batch: the same messages with the same ids, which the stream
    drops where an attempt that seemed to fail did store them. (Retrying each event on its own would
    group a job's pods' evictions, one message on the job's subject, differently, under other ids.)"""

    def on_retry(error: BaseException, failures: int, delay_s: float) -> None:
        log.info("history.publish_retry", error=repr(error), attempt=failures, delay_s=delay_s)

    async def publish(events: list[DomainEvent]) -> object:
        return await PUBLISH_RETRY.call(lambda: publish_batch(events), sleep=asyncio.sleep, on_retry=on_retry)

    return publish


@dataclass(frozen=True, slots=True)
class Transition:
    """A transition of a pod as its event records it."""

    reason: str
    message: str | None
    phase: str | None
    exit_code: int | None = None
    at: float | None = None  # seconds since the epoch; None: now


def pod_event(pod: Pod, transition: Transition, *, now: float) -> DomainEvent | None:
    """The event of `transition`, or None where the job controller reports it (a job's pods' transitions,
    with their job context; only an eviction, which it does not see happen, is node-sim's to tell)."""
    labels = pod.metadata.labels or {}
    if JOB_NAME_LABEL in labels and transition.reason != ev.POD_EVICTED:
        return None
    return DomainEvent(
        id=ev.event_id(pod.metadata.uid, transition.reason, transition.phase),
        occurred_at=rfc3339_from_epoch(transition.at if transition.at is not None else now),
        source="node-sim",
        kind="Pod",
        namespace=pod.metadata.namespace,
        name=pod.metadata.name or "",
        reason=transition.reason,
        message=transition.message,
        job=labels.get(JOB_NAME_LABEL),
        task=labels.get("volcano.sh/task-spec"),
        uid=pod.metadata.uid,
        phase=transition.phase,
        exit_code=transition.exit_code,
        node=pod.spec.node_name if pod.spec else None,
    )


def recent_transitions(pod: Pod, *, now: float, within_s: float = REPUBLISH_WITHIN_S) -> list[Transition]:
    """The transitions node-sim made of `pod` within `within_s` before `now`, as the stored pod shows
    them, oldest first: its start (Running), then its end (exited, or refused at admission).
    ValueError when a time the pod carries is not one."""
    status = pod.status
    if status is None:
        return []
    out = []
    started = parse_time(status.start_time)
    if started is not None and now - started <= within_s and status.phase in ("Running", "Succeeded", "Failed"):
        out.append(Transition(ev.POD_STARTED, None, "Running", at=started))
    if status.phase not in ("Succeeded", "Failed"):
        return out
    terminated = [
        s.state.terminated for s in status.container_statuses or () if s.state and s.state.terminated is not None
    ]
    if terminated:
        ended = parse_time(terminated[0].finished_at)
        exit_code = terminated[0].exit_code
        end = Transition(ev.POD_EXITED, status.message, status.phase, exit_code=exit_code, at=ended)
    elif status.reason:  # refused at admission: no container ever ran
        changed = [parse_time(c.last_transition_time) for c in status.conditions or ()]
        end = Transition(status.reason, status.message, "Failed", at=max((t for t in changed if t), default=None))
    else:
        return out
    if end.at is not None and now - end.at <= within_s:
        out.append(end)
    return out

"""Lifecycle policies -> the action to run (Volcano's applyPolicies) and delayed-action bookkeeping.

Resolution order, first hit wins: a request's own action (Commands, fired delays); internal events
(OutOfSync, CommandIssued, PodRunning) -> SyncJob; a request for another incarnation of the job (UID)
or from pods of an older job version -> SyncJob; the task's policies; the job's policies; SyncJob.
A policy matches on its events (`*` matches all; PodPending only when it has a timeout) or its exitCode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from vc_job_controller.logic.durations import InvalidDuration, parse_go_duration
from vc_job_controller.logic.view import DelayedAction, Request, find_task, tasks
from vc_proto.batch import Job, JobSpec, LifecyclePolicy
from vc_proto.vocabulary import Action, Event

INTERNAL_EVENTS: Final = frozenset({Event.OUT_OF_SYNC, Event.COMMAND_ISSUED, Event.POD_RUNNING})
INTERNAL_ACTIONS: Final = frozenset(
    {Action.SYNC_JOB, Action.ENQUEUE_JOB, Action.SYNC_QUEUE, Action.OPEN_QUEUE, Action.CLOSE_QUEUE}
)
POD_EVENTS: Final = frozenset({Event.POD_PENDING, Event.POD_RUNNING, Event.POD_FAILED, Event.POD_EVICTED})


@dataclass(frozen=True, slots=True)
class Resolution:
    action: str
    delay: timedelta = timedelta(0)
    # Where the action came from, for condition messages: "command", "task worker policy", ...
    source: str = "default"


def _events_of(policy: LifecyclePolicy) -> list[str]:
    """getEventlist: `events` plus `event`."""
    return [*(policy.events or []), *([policy.event] if policy.event else [])]


def _timeout(policy: LifecyclePolicy) -> timedelta | None:
    if policy.timeout is None:
        return None
    try:
        return parse_go_duration(policy.timeout)
    except InvalidDuration:
        return None  # invalid_policy() fails such jobs before any policy is applied


def _match(policies: Sequence[LifecyclePolicy], request: Request, source: str) -> Resolution | None:
    for policy in policies:
        events = _events_of(policy)
        timeout = _timeout(policy)
        if events and request.event and (request.event in events or Event.ANY in events):
            # A pod is Pending briefly every time it starts: only a timed PodPending policy means anything.
            if request.event != Event.POD_PENDING or timeout is not None:
                return Resolution(policy.action or Action.SYNC_JOB, timeout or timedelta(0), source)
        # exitCode 0 is refused by admission, so 0 never matches a real policy.
        if policy.exit_code is not None and policy.exit_code == request.exit_code:
            return Resolution(policy.action or Action.SYNC_JOB, timeout or timedelta(0), source)
    return None


def apply_policies(job: Job, request: Request) -> Resolution:
    if request.action:
        return Resolution(request.action, source="command" if not request.delayed_key else "delayed action")
    if request.event in INTERNAL_EVENTS:
        return Resolution(Action.SYNC_JOB)
    if request.job_uid and request.job_uid != (job.metadata.uid or ""):
        return Resolution(Action.SYNC_JOB, source="request for another job with the same name")
    status_version = (job.status.version if job.status else None) or 0
    if request.job_version < status_version:
        return Resolution(Action.SYNC_JOB, source="event from an older job version")
    spec = job.spec or JobSpec()
    task = find_task(spec, request.task_name) if request.task_name else None
    if task is not None:
        found = _match(task.policies or [], request, f"task {request.task_name} policy")
        if found is not None:
            return found
    return _match(spec.policies or [], request, "job policy") or Resolution(Action.SYNC_JOB)


def invalid_policy(spec: JobSpec) -> str | None:
    """Why the job's policies cannot be applied (an unparsable timeout), or None."""
    sources: list[tuple[str, Sequence[LifecyclePolicy]]] = [("job", spec.policies or [])]
    sources += [(f"task {t.name}", t.policies or []) for t in tasks(spec)]
    for where, policies in sources:
        for index, policy in enumerate(policies):
            if policy.timeout is None:
                continue
            try:
                parse_go_duration(policy.timeout)
            except InvalidDuration as error:
                return f"{where} policy {index}: timeout: {error}"
    return None


def delays_cancelled_by(request: Request, delayed: Mapping[str, DelayedAction]) -> list[str]:
    """CleanPodDelayActionsIfNeed: a pod moving on cancels what its earlier state scheduled.

    Any pod event but PodPending cancels that pod's delayed PodPending action (same pod UID: a
    recreated pod's first event must not cancel a delay raised for its predecessor); PodRunning
    also cancels its delayed PodFailed/PodEvicted action.
    """
    if request.event not in POD_EVENTS or request.event == Event.POD_PENDING:
        return []
    pending = delayed.get(request.pod_name)
    if pending is None:
        return []
    if pending.event == Event.POD_PENDING and request.pod_uid == pending.pod_uid:
        return [pending.key]
    if pending.event in (Event.POD_FAILED, Event.POD_EVICTED) and request.event == Event.POD_RUNNING:
        return [pending.key]
    return []


_SCOPES: Final[dict[str, str]] = {
    Action.RESTART_TASK: "task",
    Action.RESTART_POD: "pod",
    Action.RESTART_PARTITION: "partition",
}


def action_scope(action: str) -> str:
    """GetActionType: job, task, pod or partition."""
    return _SCOPES.get(action, "job")


def _same_target(scope: str, delayed: DelayedAction, request: Request) -> bool:
    if scope == "task":
        return delayed.task_name == request.task_name
    if scope == "pod":
        return delayed.pod_name == request.pod_name
    if scope == "partition":
        return delayed.partition_id == request.partition_id
    return True


def delays_superseded_by(action: str, request: Request, delayed: Mapping[str, DelayedAction]) -> list[str]:
    """cleanupDelayActions: after an action ran, pending delays of the same scope are moot
    (job scope: all; task: same task; pod: same pod; partition: same partition)."""
    scope = action_scope(action)
    return [key for key, d in delayed.items() if action_scope(d.action) == scope and _same_target(scope, d, request)]


def new_delay(resolution: Resolution, request: Request, *, due_at: str) -> DelayedAction:
    return DelayedAction(
        key=request.pod_name,
        action=resolution.action,
        event=request.event,
        task_name=request.task_name,
        pod_name=request.pod_name,
        pod_uid=request.pod_uid,
        partition_id=request.partition_id,
        delay=resolution.delay,
        due_at=due_at,
    )

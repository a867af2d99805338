"""decide(view, request, now) -> Plan: the whole job controller as one pure function.

Volcano's processNextReq: resolve the action from the request and the job's policies, then let the
state of the job's phase execute it. A delayed action is only scheduled. A job whose plugins or
policies make no sense is failed with a condition saying why instead of erroring forever.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from msgspec.structs import replace

from vc_core.errors import InvalidObject
from vc_core.times import rfc3339
from vc_job_controller.logic import history
from vc_job_controller.logic.draft import PlanDraft, Target, TargetType
from vc_job_controller.logic.durations import format_go_duration
from vc_job_controller.logic.kill import RETAIN_SOFT, kill_job
from vc_job_controller.logic.plan import Plan
from vc_job_controller.logic.policies import (
    INTERNAL_ACTIONS,
    Resolution,
    apply_policies,
    delays_cancelled_by,
    delays_superseded_by,
    invalid_policy,
    new_delay,
)
from vc_job_controller.logic.states import state_for
from vc_job_controller.logic.status import StatusDraft, changed, counts_only, finalize, running_duration
from vc_job_controller.logic.transitions import job_phase_event, request_pod_event, task_events
from vc_job_controller.logic.view import JobView, Request, is_deleting, is_terminal
from vc_job_controller.plugins import PluginRegistry, in_tree_plugins, load_plugins
from vc_job_controller.plugins.interface import JobPlugin, PluginDeps, PluginError
from vc_job_controller.plugins.keys import generate_rsa_key_pair
from vc_proto.batch import JobStatus
from vc_proto.vocabulary import Action, Event, JobPhase

PLUGIN_ERROR = "PluginError"
INVALID_POLICY = "InvalidPolicy"
INVALID_JOB = "InvalidJob"


def decide(
    view: JobView,
    request: Request,
    now: datetime,
    *,
    plugins: PluginRegistry | None = None,
    deps: PluginDeps | None = None,
    merged: Sequence[Request] = (),
    hold_counts: bool = False,
    tasks_seen: Mapping[str, tuple[str, datetime]] | None = None,
) -> Plan:
    """The plan for `request` on `view`. `plugins` and `deps` default to the in-tree plugins and real
    RSA key generation; tests pass a deterministic key generator.

    `merged`: requests queued right after `request` that this pass covers too (`coalesce.take_pass`:
    each can only cause an immediate SyncJob, like `request`); their pods' transitions are recorded.
    `hold_counts`: a change of pod counts alone (the job's phase the same; a task's summarised phase
    may change) is not written now but marked `status_held`: the shell holds one while such changes are
    still arriving (a gang's pods start within moments of each other).
    `tasks_seen`: for tasks whose phase change was held, the phase and when the shell first saw it: a
    record of that change is stamped then, not when the hold let it through.
    """
    resolution = apply_policies(view.job, request)
    if is_deleting(view.job):
        return Plan(action=resolution.action)  # Volcano skips management of a job being deleted
    plan = _new_draft(view, request, resolution, now, merged)
    if resolution.delay:
        return _delay(plan, resolution)
    registry = plugins if plugins is not None else in_tree_plugins()
    try:
        _execute(plan, resolution, registry, deps or PluginDeps(ssh_keygen=generate_rsa_key_pair))
    except PluginError as error:
        plan = _new_draft(view, request, resolution, now, merged)
        _fail(plan, PLUGIN_ERROR, str(error))
    except InvalidObject as error:
        # e.g. a template quantity that is not one: admission should have refused it; fail, don't crash.
        plan = _new_draft(view, request, resolution, now, merged)
        _fail(plan, INVALID_JOB, str(error))
    return _freeze(plan, hold_counts=hold_counts, tasks_seen=tasks_seen)


def _new_draft(
    view: JobView, request: Request, resolution: Resolution, now: datetime, merged: Sequence[Request] = ()
) -> PlanDraft:
    plan = PlanDraft(view=view, request=request, action=resolution.action, now=now, plugins=[])
    plan.cause = describe(resolution, request)
    plan.cancel_delays(delays_cancelled_by(request, view.delayed))
    if request.delayed_key is not None:
        plan.cancel_delays([request.delayed_key])
    _record_request(plan)
    for other in merged:
        transition = request_pod_event(plan, other)
        if transition is not None:
            plan.events.append(transition)
    return plan


def describe(resolution: Resolution, request: Request) -> str:
    """`RestartJob on PodEvicted of pod j-w-0 (job policy)`."""
    text = resolution.action
    if request.event:
        text += f" on {request.event}"
    if request.pod_name:
        text += f" of pod {request.pod_name}"
    if request.exit_code:
        text += f" (exit code {request.exit_code})"
    return f"{text} ({resolution.source})" if resolution.source != "default" else text


def _record_request(plan: PlanDraft) -> None:
    pod_transition = request_pod_event(plan)
    if pod_transition is not None:
        plan.events.append(pod_transition)
    if plan.request.event == Event.COMMAND_ISSUED:
        plan.events.append(_job_event(plan, history.COMMAND_ISSUED, f"command {plan.action} issued"))


def _delay(plan: PlanDraft, resolution: Resolution) -> Plan:
    """AddDelayActionForJob: schedule, unless the same action is already waiting for this pod."""
    view, request = plan.view, plan.request
    waiting = view.delayed.get(request.pod_name)
    if waiting is None or waiting.action != resolution.action or waiting.key in plan.delays_to_cancel:
        due_at = rfc3339(plan.now + resolution.delay)
        plan.delays_to_schedule.append(new_delay(resolution, request, due_at=due_at))
        message = f"Execute action {resolution.action} after {format_go_duration(resolution.delay)}: {plan.cause}"
        plan.events.append(_job_event(plan, history.ACTION_DELAYED, message))
    return _freeze(plan)


def _execute(plan: PlanDraft, resolution: Resolution, registry: PluginRegistry, deps: PluginDeps) -> None:
    view = plan.view
    problem = _configuration_problem(plan, registry, deps)
    if problem is not None and not is_terminal(view.phase):
        _fail(plan, *problem)
        return
    if resolution.action != Action.SYNC_JOB:
        plan.events.append(_job_event(plan, history.ACTION_EXECUTED, f"Start to execute action {plan.cause}"))
    state_for(view.phase)(plan, resolution.action, target_of(resolution.action, plan.request))
    if resolution.action not in INTERNAL_ACTIONS:
        plan.cancel_delays(delays_superseded_by(resolution.action, plan.request, view.delayed))


def _configuration_problem(plan: PlanDraft, registry: PluginRegistry, deps: PluginDeps) -> tuple[str, str] | None:
    """Load the job's plugins into the draft; (reason, message) when plugins or policies are nonsense."""
    policy_problem = invalid_policy(plan.view.spec)
    if policy_problem is not None:
        return INVALID_POLICY, policy_problem
    try:
        loaded: list[JobPlugin] = load_plugins(plan.view.spec.plugins, registry=registry, deps=deps)
    except PluginError as error:
        return PLUGIN_ERROR, str(error)
    plan.plugins = loaded
    return None


def _fail(plan: PlanDraft, reason: str, message: str) -> None:
    """Release the job's pods and end it Failed, saying why (never retry a job that cannot work)."""
    plan.action = Action.TERMINATE_JOB

    def update(draft: StatusDraft) -> None:
        draft.move_to(JobPhase.FAILED, reason, message)

    if is_terminal(plan.view.phase):
        return
    kill_job(plan, RETAIN_SOFT, update)


def target_of(action: str, request: Request) -> Target | None:
    """GetStateAction: the target of a restart of a task, pod or partition."""
    if action == Action.RESTART_TASK:
        return Target(TargetType.TASK, request.task_name)
    if action == Action.RESTART_POD:
        return Target(TargetType.POD, request.task_name, request.pod_name)
    if action == Action.RESTART_PARTITION:
        return Target(TargetType.PARTITION, request.task_name, request.pod_name, request.partition_id)
    return None


def _freeze(
    plan: PlanDraft, *, hold_counts: bool = False, tasks_seen: Mapping[str, tuple[str, datetime]] | None = None
) -> Plan:
    old = plan.view.status
    status = None if plan.status is None else finalize(old, plan.status, now=plan.now)
    if status is not None and plan.killed:
        status = replace(status, running_duration=running_duration(status, plan.view.job.metadata.creation_timestamp))
    if status is not None and not changed(old, status):
        status = None
    if status is not None and hold_counts and counts_only(old, status):
        # A gang's pods are created, and start, within moments of each other: their counts (and the
        # task's phase they sum to) make one write, not one per pass (on kube each is an apiserver
        # PATCH of the job, and the job's phase change often follows at once). Nothing is recorded
        # until it is written.
        moved = tuple((e.task or "", e.phase or "") for e in task_events(plan, old, status))
        return plan.build(status=None, status_held=True, held_tasks=moved)
    if status is not None:
        _record_status_change(plan, old, status, tasks_seen)
    return plan.build(status=status)


def _record_status_change(
    plan: PlanDraft, old: JobStatus, new: JobStatus, tasks_seen: Mapping[str, tuple[str, datetime]] | None
) -> None:
    phase_event = job_phase_event(plan, old, new)
    if phase_event is not None:
        plan.events.append(phase_event)
    plan.events.extend(task_events(plan, old, new, seen=tasks_seen))


def _job_event(plan: PlanDraft, reason: str, message: str) -> history.HistoryEvent:
    return history.HistoryEvent(
        occurred_at=rfc3339(plan.now),
        kind=history.JOB_KIND,
        namespace=plan.view.namespace,
        name=plan.view.name,
        reason=reason,
        message=message,
        job=plan.view.name,
        uid=plan.view.uid or None,
        phase=plan.view.phase or None,
    )

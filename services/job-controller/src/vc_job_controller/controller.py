"""The job controller's shell: caches, per-job request queues, sharding, and the reconcile loop.

Requests for one job are handled one at a time, in order (Volcano hashes a job to one worker); jobs
are shared between instances by rendezvous hashing (`Membership`), and every write is fenced by the
instance's lease. Delayed policy actions are timers of this loop; a restart re-derives them from
state (see `startup_requests`). A job admission would refuse (it reached the store some other way)
is not acted on: its status and history say why (`Admissibility`, `logic/refusal.py`); one admission
would have defaulted is acted on with admission's defaults (`Admissibility.admitted`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog
from prometheus_client import Counter, Histogram

from vc_bus.decoding import CorruptObject
from vc_bus.dispatch import KeyedDispatcher
from vc_core.errors import NotFound, PermanentError
from vc_core.store import ObjectStore
from vc_core.times import parse_rfc3339
from vc_job_controller import requests as rq
from vc_job_controller import volcano_metrics
from vc_job_controller.admissibility import Admissibility
from vc_job_controller.delays import DelayStore
from vc_job_controller.executor import PlanExecutor, Publish
from vc_job_controller.logic.cached_pods import cached_pod
from vc_job_controller.logic.coalesce import take_pass
from vc_job_controller.logic.decision import decide
from vc_job_controller.logic.refusal import is_refused_for, plan_refusal
from vc_job_controller.logic.view import DelayedAction, JobView, Request, request_for_fired
from vc_proto.batch import Job
from vc_proto.bus import Command
from vc_proto.core import Pod, PriorityClass
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.selectors import pods_of_vcjobs
from vc_proto.vocabulary import DEFAULT_QUEUE, JOB_VERSION_KEY, JobPhase, PodPhase
from vc_runtime.informer import Informer
from vc_runtime.membership import Membership
from vc_runtime.refusals import report_refused
from vc_runtime.sharding import FencedStore
from vc_runtime.status_pacing import Pacing, StatusHolds
from vc_validation import Violation, summarize

log = structlog.get_logger(__name__)
JobKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class CommandDue:
    """A Command on a job arrived: delete it, then run its action."""

    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class DelayDue:
    """A delayed policy action's time came."""

    job: JobKey
    delay_key: str


@dataclass(frozen=True, slots=True)
class ResyncDue:
    """A job's held-back status counts are due a write."""

    job: JobKey


# What the dispatcher runs, one at a time per value: a job's queued requests, or one of the above.
Work = JobKey | CommandDue | DelayDue | ResyncDue

RECONCILES = Counter("tephra_job_controller_reconciles_total", "Requests handled", ["action", "outcome"])
LATENCY = Histogram("tephra_job_controller_reconcile_seconds", "Time to handle one request")
MERGED = Counter("tephra_job_controller_merged_requests_total", "Requests handled by the pass of an earlier one")
MAX_PENDING_PER_JOB = 1000
# A change of a job's pod counts alone (decide's hold_counts) is held back until it has settled for
# COUNTS_SETTLE_S from when it was first held, and until COUNTS_EVERY_S after the job's last status
# write; a sync then writes what it finds. A gang's pods are created, and start, within moments of each
# other: one write for all of them, and often none of its own (the job's phase change, written at once,
# carries the counts). Measured on kube: the partial-Running PATCH of most gang jobs went.
COUNTS_EVERY_S = 1.0
COUNTS_SETTLE_S = 1.0
# While a Pending job's gang comes up (every task the held change moves is Pending or Running: its pods
# created as soon as its PodGroup is Inqueue, then starting once bound) a change of counts waits up to
# STARTING_WAIT_S instead: the job's phase change when minAvailable pods run is written at once and
# carries them. On kube, 1,000 nodes under load, 5-9 s passed between pods created and the gang running,
# and its pods started over seconds: one or two PATCHes of their own per job.
STARTING_WAIT_S = 10.0
COUNTS = Pacing(every_s=COUNTS_EVERY_S, settle_s=COUNTS_SETTLE_S)
_COMING_UP = frozenset((PodPhase.PENDING, PodPhase.RUNNING))  # task phases (logic.transitions.task_phase)
# The membership's count of changes is looked at this often even when no wake-up comes (follow_membership).
MEMBERSHIP_LOOK_S = 1.0


class JobController:
    def __init__(
        self,
        store: ObjectStore,
        publish: Publish,
        membership: Membership,
        *,
        source: str,
        workers: int = 16,
        delays: DelayStore | None = None,
    ) -> None:
        self.store = store
        self.delay_store = delays
        self.membership = membership
        # Every write goes through the membership's fence (FencedStore): an instance whose lease lapsed
        # mid-pass writes nothing more, whichever step it had reached.
        self.writer = FencedStore(store, membership)
        self.executor = PlanExecutor(self.writer, publish, source=source, remember=self._remember_created)
        self.jobs = Informer(store, Job, on_change=self._job_changed)
        # Only vcjobs' pods are decoded and cached (on a shared cluster most pods are not Volcano's), and
        # of each only what the controller reads (logic/cached_pods.py).
        self.pods = Informer(store, Pod, on_change=self._pod_changed, select=pods_of_vcjobs, keep=cached_pod)
        self.podgroups = Informer(store, PodGroup, on_change=self._podgroup_changed)
        self.commands = Informer(store, Command, on_change=self._command_changed)
        self.priority_classes = Informer(store, PriorityClass)
        self.queues = Informer(store, Queue, on_change=self._queue_changed)
        self.admissibility = Admissibility(queue_exists=self._queue_exists)
        self.awaiting_queue: dict[str, set[JobKey]] = {}
        self.pods_by_job: dict[JobKey, dict[str, Pod]] = {}
        self.pending: dict[JobKey, deque[Request]] = {}
        self.delayed: dict[JobKey, dict[str, DelayedAction]] = {}
        # Each job's last status write and its change of counts held back (monotonic times), and for each
        # task whose phase that change moves, the phase and when it was first seen (for the records the
        # write makes).
        self.status_holds: StatusHolds[JobKey] = StatusHolds(COUNTS)
        self.held_tasks: dict[JobKey, dict[str, tuple[str, datetime]]] = {}
        self.resync_armed: dict[JobKey, float] = {}  # jobs with a sync set for when their held counts are due
        self.dispatcher: KeyedDispatcher[Work] = KeyedDispatcher(self._handle, workers=workers, name="jobs")

    def _remember_created(self, obj: Pod | PodGroup) -> None:
        """A pod or PodGroup we just created goes into its informer at once (the watch's copy of the same
        revision is then a no-op): the next pass sees it and does not create it again."""
        if isinstance(obj, Pod):
            self.pods.remember(obj)
        else:
            self.podgroups.remember(obj)

    # -- intake: changes become requests ----------------------------------------------------------------
    def enqueue(self, key: JobKey, request: Request) -> None:
        queue = self.pending.setdefault(key, deque())
        if request.event == rq.Event.OUT_OF_SYNC and not request.action and queue and queue[-1].event == request.event:
            return  # consecutive plain syncs: one pass covers them (level-triggered)
        if len(queue) >= MAX_PENDING_PER_JOB:
            queue.popleft()
        queue.append(request)
        self.dispatcher.submit(key)

    def _job_changed(self, old: Job | None, new: Job | None) -> None:
        if new is None:
            key = (old.metadata.namespace or "", old.metadata.name or "") if old else ("", "")
            self.pending.pop(key, None)
            self.delayed.pop(key, None)
            self.status_holds.forget(key)
            self.held_tasks.pop(key, None)
            self.resync_armed.pop(key, None)
            self.admissibility.forget(key)
            if old is not None:
                volcano_metrics.job_deleted(old)
            return
        request = rq.for_job_changed(old, new)
        if request is not None:
            self.enqueue((new.metadata.namespace or "", new.metadata.name or ""), request)

    def _pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        pod = new or old
        assert pod is not None
        owner = rq.owning_job(pod)
        if owner is None:
            return
        key = (pod.metadata.namespace or "", owner[0])
        siblings = self.pods_by_job.setdefault(key, {})
        if new is None:
            siblings.pop(pod.metadata.name or "", None)
            self.enqueue(key, rq.for_pod_deleted(pod, owner[1]))
            return
        siblings[new.metadata.name or ""] = new
        job = self._admitted(key)
        request = (
            rq.for_pod_added(new, owner[1]) if old is None else rq.for_pod_updated(old, new, owner[1], job, siblings)
        )
        self.enqueue(key, request)

    def _podgroup_changed(self, old: PodGroup | None, new: PodGroup | None) -> None:
        group = new or old
        if group is None:
            return
        for ref in group.metadata.owner_references or []:
            if ref.kind == "Job" and ref.controller:
                # A deletion wakes the job too: a Restarting job last looked at while its old PodGroup was
                # still there (and not admitted) waits for nothing else to create the next one.
                request = rq.for_podgroup_deleted(ref.uid) if new is None else rq.for_podgroup_changed(old, new)
                if request is not None:
                    self.enqueue((group.metadata.namespace or "", ref.name), request)

    def _queue_changed(self, old: Queue | None, new: Queue | None) -> None:
        """A job refused for want of its queue is looked at again once the queue exists."""
        if new is None or old is not None:
            return
        for key in self.awaiting_queue.pop(new.metadata.name or "", set()):
            job = self.jobs.get(*key)
            if job is not None:
                self.enqueue(key, rq.Request(event=rq.Event.OUT_OF_SYNC.value, job_uid=job.metadata.uid or ""))

    def _admitted(self, key: JobKey) -> Job | None:
        """The cached job with admission's defaults (the controller's view of every job it acts on)."""
        job = self.jobs.get(*key)
        return None if job is None else self.admissibility.admitted(key, job)

    async def _queue_exists(self, name: str) -> bool:
        if self.queues.get(None, name) is not None:
            return True
        try:
            self.queues.remember(await self.store.get(Queue, None, name))
        except (NotFound, CorruptObject):
            return False
        return True

    def _command_changed(self, old: Command | None, new: Command | None) -> None:
        if new is not None and old is None and new.target and new.target.kind == "Job":
            self.dispatcher.submit(CommandDue(new.metadata.namespace or "", new.metadata.name or ""))

    # -- the loop ---------------------------------------------------------------------------------------
    def owns(self, key: JobKey) -> bool:
        return self.membership.owns(f"{key[0]}/{key[1]}")

    async def _handle(self, work: Work) -> None:
        if isinstance(work, CommandDue):
            await self._run_command(work)
        elif isinstance(work, DelayDue):
            self._fire_delay(work)
        elif isinstance(work, ResyncDue):
            self._resync(work.job)
        else:
            await self._handle_job(work)

    async def _handle_job(self, key: JobKey) -> None:
        queue = self.pending.get(key)
        owned = self.owns(key)
        if not owned:
            self._forget_hold(key)  # another instance writes its status now; ours may be stale when it returns
        if not queue or not owned:
            self.pending.pop(key, None)
            return
        job = self.jobs.get(key[0], key[1])
        if job is None:
            queue.popleft()
            requests: list[Request] = []
        else:  # a run of requests that can only cause a SyncJob is one pass (logic/coalesce.py)
            requests = take_pass(job, queue, self.delayed.get(key, {}))
        failed = False
        try:
            if job is not None:
                await self._reconcile(key, job, requests)
        except PermanentError:
            raise  # the dispatcher gives the key up: so do we
        except Exception:
            # A conflict, a temporary error, or a transport one (a NATS timeout while a cluster elects a
            # leader): the dispatcher retries the key, so the requests must still be here to retry. A new
            # job has nothing else that would wake it (found by make chaos: jobs never started).
            queue.extendleft(reversed(requests))  # try the same requests again on fresh state
            failed = True
            raise
        finally:
            if not queue:
                self.pending.pop(key, None)
            elif not failed:
                # More requests: another pass. Not after a failure: the dispatcher's retry comes after its
                # backoff, and a submit now would run the key again at once, over and over while the store
                # is down (found by kube-mode chaos: 1,025 attempts in an apiserver restart, and a crash).
                self.dispatcher.submit(key)

    async def _reconcile(self, key: JobKey, job: Job, requests: list[Request]) -> None:
        request, merged = requests[0], requests[1:]
        refused = await self.admissibility.violations(key, job)
        if refused:
            await self._refuse(key, job, refused)
            return
        view = JobView(
            self.admissibility.admitted(key, job),  # as admission would have stored it (its defaults)
            dict(self.pods_by_job.get(key, {})),
            self.podgroups.get(key[0], f"{key[1]}-{job.metadata.uid}"),
            delayed=dict(self.delayed.get(key, {})),
            priority_classes={pc.metadata.name or "": pc.value for pc in self.priority_classes.items.values()},
        )
        settle = STARTING_WAIT_S if self._gang_starting(key, job) else None
        now = time.monotonic()
        with LATENCY.time():
            plan = decide(
                view,
                request,
                datetime.now(UTC),
                merged=merged,
                hold_counts=now < self.status_holds.due_at(key, now, settle_s=settle),
                tasks_seen=self.held_tasks.get(key),
            )
            try:
                stored = await self.executor.execute(job, plan)
            except NotFound:
                RECONCILES.labels(plan.action, "gone").inc()
                return
        if stored is not job:
            self.jobs.remember(stored)
        if plan.status is not None:
            self.status_holds.wrote(key, time.monotonic())
        if plan.status_held:  # (a plan holding its status writes none)
            now = time.monotonic()
            self._note_held_tasks(key, plan.held_tasks)
            due = self.status_holds.hold(key, now, settle_s=STARTING_WAIT_S if self._gang_starting(key, job) else None)
            armed = self.resync_armed.get(key)
            if armed is None or due < armed:
                self.resync_armed[key] = due
                self.dispatcher.submit_after(ResyncDue(key), due - now)
        else:
            # Written, or the counts are back to what is stored: nothing is held any more.
            self._forget_hold(key)
        await self._apply_delays(key, plan.delays_to_cancel, plan.delays_to_schedule)
        RECONCILES.labels(plan.action, "ok").inc()
        MERGED.inc(len(merged))

    def _gang_starting(self, key: JobKey, job: Job) -> bool:
        """The job is Pending and the change held for it moves tasks to Pending or Running only (its pods
        created, or starting; none finished or gone)."""
        state = job.status.state if job.status else None
        if state is not None and state.phase not in ("", JobPhase.PENDING):
            return False
        held = self.held_tasks.get(key) or {}
        return bool(held) and all(phase in _COMING_UP for phase, _ in held.values())

    def _note_held_tasks(self, key: JobKey, moved: tuple[tuple[str, str], ...]) -> None:
        """Each task the held change moves, in the phase it moves to, first seen when: kept from an earlier
        pass while the task's phase is the same, now otherwise (a later change has its own time)."""
        before = self.held_tasks.get(key, {})
        now = datetime.now(UTC)
        self.held_tasks[key] = {
            task: before[task] if task in before and before[task][0] == phase else (phase, now) for task, phase in moved
        }

    def _forget_hold(self, key: JobKey) -> None:
        self.status_holds.release(key)
        self.held_tasks.pop(key, None)

    async def _refuse(self, key: JobKey, job: Job, violations: tuple[Violation, ...]) -> None:
        """Act on nothing; say why once (status, history, log, metric)."""
        if violations[0].rule == "queue-exists":
            self.awaiting_queue.setdefault((job.spec.queue if job.spec else None) or DEFAULT_QUEUE, set()).add(key)
        message = summarize(violations)
        if is_refused_for(job, message):
            return
        report_refused(kind="Job", key=f"{key[0]}/{key[1]}", rule=violations[0].rule, message=message)
        plan = plan_refusal(job, message, datetime.now(UTC))
        self._forget_hold(key)  # the refusal's status replaces whatever was held
        stored = await self.executor.execute(job, plan)
        self.jobs.remember(stored)
        RECONCILES.labels("Refuse", "ok").inc()

    async def _apply_delays(self, key: JobKey, cancel: tuple[str, ...], schedule: tuple[DelayedAction, ...]) -> None:
        table = self.delayed.setdefault(key, {})
        for name in cancel:
            table.pop(name, None)
            if self.delay_store is not None:
                await self.delay_store.delete(key[0], key[1], name)
        for delayed in schedule:
            if self.delay_store is not None:
                await self.delay_store.put(key[0], key[1], delayed)
            self._arm(key, delayed)

    def _arm(self, key: JobKey, delayed: DelayedAction) -> None:
        """Hold the delayed action and set its timer (from its absolute due time when it has one)."""
        self.delayed.setdefault(key, {})[delayed.key] = delayed
        due = parse_rfc3339(delayed.due_at).timestamp() if delayed.due_at else 0.0
        wait = max(0.0, due - datetime.now(UTC).timestamp()) if due else delayed.delay.total_seconds()
        self.dispatcher.submit_after(DelayDue(key, delayed.key), wait)

    def _fire_delay(self, due: DelayDue) -> None:
        delayed = self.delayed.get(due.job, {}).get(due.delay_key)
        if delayed is not None:
            self.enqueue(due.job, request_for_fired(delayed))

    def _resync(self, key: JobKey) -> None:
        """The counts a pass held back are due: a sync writes what it finds now."""
        self.resync_armed.pop(key, None)
        job = self.jobs.get(*key)
        if job is not None and self.owns(key):
            self.enqueue(key, rq.Request(event=rq.Event.OUT_OF_SYNC.value, job_uid=job.metadata.uid or ""))
        else:
            self._forget_hold(key)

    async def _run_command(self, due: CommandDue) -> None:
        """Delete the Command first (at most once, as Volcano), then run its action on the job."""
        namespace, name = due.namespace, due.name
        command = self.commands.get(namespace, name)
        if command is None or command.target is None:
            return
        key = (namespace, command.target.name)
        if not self.owns(key):
            return
        try:
            await self.writer.delete(Command, namespace, name, uid=command.metadata.uid)
        except NotFound:
            return  # another life of this controller ran it already
        self.commands.forget(namespace, name)
        self.enqueue(key, rq.for_command(command.action or ""))

    # -- start-up and ownership changes -------------------------------------------------------------------
    async def restore_delays(self) -> None:
        """Re-arm the delayed actions a previous life (or another owner) stored."""
        if self.delay_store is None:
            return
        async for namespace, job, delayed in self.delay_store.load():
            key = (namespace, job)
            if self.jobs.get(namespace, job) is None:
                await self.delay_store.delete(namespace, job, delayed.key)  # its job is gone
            elif self.owns(key) and delayed.key not in self.delayed.get(key, {}):
                self._arm(key, delayed)

    def startup_requests(self) -> None:
        """After the caches synced: sync every owned job and re-raise edges a crash may have swallowed
        (a Failed pod of the current version means its PodFailed was not handled yet)."""
        for (namespace, name), job in list(self.jobs.items.items()):
            key = (namespace or "", name)
            if not self.owns(key):
                continue
            self.enqueue(key, rq.Request(event=rq.Event.OUT_OF_SYNC.value, job_uid=job.metadata.uid or ""))
            version = str((job.status.version if job.status else None) or 0)
            for pod in self.pods_by_job.get(key, {}).values():
                if (pod.metadata.annotations or {}).get(JOB_VERSION_KEY) != version or pod.metadata.deletion_timestamp:
                    continue
                failed = pod.status and pod.status.phase == "Failed"
                if failed:
                    self.enqueue(
                        key,
                        rq.for_pod_updated(
                            _as_running(pod), pod, job.metadata.uid or "", self._admitted(key), self.pods_by_job[key]
                        ),
                    )
        for (namespace, name), command in list(self.commands.items.items()):
            if command.target and command.target.kind == "Job":
                self.dispatcher.submit(CommandDue(namespace or "", name))

    async def follow_membership(self, shutdown: asyncio.Event) -> None:
        """After each change of the members (or of this instance's standing), once settled: re-arm the
        delays and sync every job this instance owns now. Nothing else looks again at a job whose requests
        were dropped while a peer owned it, so no change may be missed: the loop acts on the membership's
        count of changes, not on a wake-up alone. `wait_changed` clears its event when called, and a wait
        that times out in the moment the event is set misses it, and the survivor of two controllers
        then never took up the jobs its peer had held."""
        acted_on = self.membership.changes
        while not shutdown.is_set():
            if self.membership.changes == acted_on:
                try:
                    async with asyncio.timeout(MEMBERSHIP_LOOK_S):
                        await self.membership.wait_changed()
                except TimeoutError:
                    continue  # looks at the count again: a change told as the wait timed out is seen
            acted_on = self.membership.changes  # read before acting: a change told from here on runs again
            await self.membership.wait_settled()
            await self.restore_delays()
            self.startup_requests()


def _as_running(pod: Pod) -> Pod:
    import msgspec

    from vc_proto.core import PodStatus

    return msgspec.structs.replace(pod, status=PodStatus(phase="Running"))

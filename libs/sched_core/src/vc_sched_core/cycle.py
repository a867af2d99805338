"""run_cycle: one scheduling session over a snapshot, the decisions out (pure; no I/O, no event loop)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from itertools import chain

import msgspec

from vc_proto.vocabulary import PodGroupPhase
from vc_sched_core.actions import in_tree_actions
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.framework.conf import SchedulerConf, default_conf, load_conf
from vc_sched_core.framework.decisions import Bind, Evict, PodGroupStatusUpdate, QueueStatusUpdate
from vc_sched_core.framework.framework import SCHEDULER_NAMES, close_session, open_session
from vc_sched_core.framework.interfaces import ActionFactory, PluginFactory
from vc_sched_core.framework.model import TaskStatus
from vc_sched_core.framework.registry import Registry
from vc_sched_core.framework.session import Session
from vc_sched_core.plugins import in_tree_plugins
from vc_sched_core.snapshot.cluster import ClusterSnapshot
from vc_sched_core.snapshot.vgpu import VGPUDeviceFigures, VGPUPodFigures

EVICTING_ACTIONS = frozenset({"preempt", "reclaim", "shuffle"})  # skipped once a bind budget is spent

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class CycleStats:
    duration_s: float
    durations_s: dict[str, float]  # "action:allocate", "plugin:gang:open", ...
    jobs: int
    tasks_pending: int
    nodes: int
    # Per Volcano scheduling stage ("Predicate", "Scoring"), the seconds of each task's (node_search).
    stages_s: dict[str, list[float]] = field(default_factory=dict)
    job_shares: dict[str, float] = field(default_factory=dict)  # drf's share per job uid at session close
    retried_jobs: tuple[str, ...] = ()  # job uids gang left unready (Volcano's job retries)
    # deviceshare's GPUs as the session left them (Volcano's volcano_vgpu_device_* metrics): per GPU
    # (UUID, node) of every node with vGPUs, and per pod holding one (UUID, node, pod name); empty
    # without vGPU sharing.
    vgpu_devices: dict[tuple[str, str], VGPUDeviceFigures] = field(default_factory=dict)
    vgpu_pods: dict[tuple[str, str, str], VGPUPodFigures] = field(default_factory=dict)
    # The whole cluster's resources as the session counted them (its share's nodes and `outside`), by
    # name: what drf divided each job's allocation by.
    total: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CycleResult:
    decisions: tuple[Bind | Evict, ...]
    podgroups: dict[str, PodGroupStatusUpdate]
    queues: tuple[QueueStatusUpdate, ...]
    pipelined: tuple[str, ...]  # "<ns>/<pod>" of tasks left Pipelined at session close
    stats: CycleStats
    # The earliest time at which time alone may change a decision (Session.recheck_by); None: only a
    # change of the cluster can.
    recheck_at: datetime | None = None
    # Jobs with pods to place that the session did not get to (its bind budget was spent): the next
    # session should run at once.
    deferred: frozenset[str] = frozenset()

    @property
    def binds(self) -> dict[str, str]:
        return {d.pod: d.node for d in self.decisions if isinstance(d, Bind)}

    @property
    def bind_annotations(self) -> dict[str, dict[str, str]]:
        """Per bound pod that gets any, the annotations its bind writes (deviceshare's GPU assignment)."""
        return {d.pod: dict(d.annotations) for d in self.decisions if isinstance(d, Bind) and d.annotations}

    @property
    def evictions(self) -> list[str]:
        return [d.pod for d in self.decisions if isinstance(d, Evict)]


@dataclass(slots=True)
class _Timer:
    clock: Clock
    durations: dict[str, float] = field(default_factory=dict)

    def __call__(self, name: str, fn: Callable[[], None]) -> None:
        start = self.clock()
        fn()
        self.durations[name] = self.durations.get(name, 0.0) + self.clock() - start


def load_scheduler_conf(text: str | bytes | None = None, *, strict: bool = False) -> SchedulerConf:
    """The conf from YAML text, validated against the in-tree names; None gives the default. Volcano
    plugins Tephra lacks are left out and listed in `skipped` (refused when `strict`)."""
    known = {"known_actions": in_tree_actions().names(), "known_plugins": in_tree_plugins().names()}
    return default_conf(**known) if text is None else load_conf(text, **known, strict=strict)


def run_cycle(
    snapshot: ClusterSnapshot,
    conf: SchedulerConf | None = None,
    *,
    now: datetime | None = None,
    session_uid: str = "session-1",
    scheduler_names: Iterable[str] = SCHEDULER_NAMES,
    plugins: Registry[PluginFactory] | None = None,
    actions: Registry[ActionFactory] | None = None,
    clock: Clock = time.perf_counter,
    carried: CarriedState | None = None,
    search_start: float = 0.0,
    report: Callable[[str], bool] | None = None,
    report_unchanged: bool = True,
    bind_budget: int | None = None,
    stream: Callable[[tuple[Bind, ...]], None] | None = None,
) -> CycleResult:
    """Open a session, run the configured actions in order, close it. A `carried` state kept from one
    call to the next opens each session on the previous one's state, rebuilding only what changed in the
    snapshot (see carried.py): the decisions are the same as without it.

    `search_start` is where in the node list the first feasible-node search starts, as a fraction:
    instances sharing a cluster start apart, so their gangs mostly land on different nodes and their
    ledger reservations rarely meet (one instance: 0, Volcano's start). `report` limits the PodGroup
    statuses returned to those it names (an instance writes only the ones it owns). With a carried state and
    `report_unchanged=False`, a status that cannot differ from the one the previous cycle on that state
    returned (or left out the same way) is left out: that of a ready job carried unchanged that this
    session did not touch (its phase, counts and conditions are the previous cycle's; only the
    condition's transition id, the session's, is new).

    `bind_budget` bounds the binds one session decides (None: no bound, Volcano's way; `vcctl sim cycle`
    has none). Once allocate has decided that many it starts no further job: the jobs it did not get to
    are `deferred`, their statuses left out (nothing was tried for them, so an "unschedulable" would be
    wrong), and the actions that evict (preempt, reclaim, shuffle) do not run: a session that could still
    place pods is not one that needs room made. The next session takes the rest.

    `stream`, when given, is called (in the session's thread) with each job's binds as soon as allocate
    has committed them and the session will bind no more of that job, so they can be written while the
    session goes on (Volcano binds at each statement's commit too). The result's decisions are the same,
    streamed binds included."""
    conf = conf or load_scheduler_conf()
    plugins = plugins or in_tree_plugins()
    actions = actions or in_tree_actions()
    timer = _Timer(clock)
    start = clock()
    try:
        opened_at = clock()
        ssn, instances = open_session(
            snapshot,
            conf,
            plugins=plugins,
            now=now,
            uid=session_uid,
            scheduler_names=scheduler_names,
            timed=timer,
            carried=carried,
        )
        timer.durations["session:open"] = clock() - opened_at  # Volcano's open_session_duration
        if len(ssn.nodes):
            ssn.next_start_row = int(search_start * len(ssn.nodes)) % len(ssn.nodes)
        pending = sum(job.count(TaskStatus.PENDING) for job in ssn.jobs.values())
        ssn.bind_budget = bind_budget
        ssn.stream = stream
        for name in conf.actions:
            if name in EVICTING_ACTIONS and ssn.budget_spent():
                continue
            action = actions[name](conf.action_arguments(name))
            timer(f"action:{name}", partial(action.execute, ssn))
        if carried is not None and not report_unchanged and carried.unreported is not None:
            report = _changed_only(ssn, carried.unreported, report)
        if ssn.deferred:
            report = _tried_only(ssn.deferred, report)
        statuses, queues = close_session(ssn, instances, timed=timer, report=report)
        if carried is not None:
            # Reported again next cycle, as they hold only for this session: Unknown (the job failed in
            # it with tasks running: the Unschedulable condition carries its uid), and the status of a
            # job this session changed (placed, evicted, pipelined), which counts its decisions. Should
            # none take effect (every bind or eviction failed), the next session reads the job as it was,
            # rebuilds nothing, and would leave out a status that is no longer what it reported (found
            # by the carried-state property test: a job's pod evicted, the eviction never made).
            # A deferred job's status was left out: the next session reports it, carried unchanged or not.
            journal = ssn.journal
            carried.reported(
                again=chain(
                    (
                        uid
                        for uid, status in statuses.items()
                        if status.phase == PodGroupPhase.UNKNOWN
                        or (journal is not None and uid in ssn.jobs and journal.touched(ssn.jobs[uid]))
                    ),
                    ssn.deferred,
                )
            )
        pipelined = sorted(t.key for job in ssn.jobs.values() for t in job.tasks_in(TaskStatus.PIPELINED))
    finally:
        if carried is not None:
            carried.close()  # the carried objects back as the snapshot built them, for the next cycle
    stats = CycleStats(
        clock() - start,
        timer.durations,
        len(ssn.jobs),
        pending,
        len(ssn.nodes),
        ssn.stage_durations,
        ssn.job_shares,
        tuple(ssn.retried_jobs),
        ssn.vgpu_devices,
        ssn.vgpu_pods,
        dict(zip(ssn.space.names, ssn.total_resource.tolist(), strict=True)),
    )
    return CycleResult(
        tuple(ssn.decisions),
        statuses,
        tuple(queues),
        tuple(pipelined),
        stats,
        ssn.recheck_at,
        deferred=frozenset(ssn.deferred),
    )


def _tried_only(deferred: set[str], report: Callable[[str], bool] | None) -> Callable[[str], bool]:
    """`report`, without the jobs the session deferred (a bind budget spent before allocate got to them)."""

    def wanted(uid: str) -> bool:
        return uid not in deferred and (report is None or report(uid))

    return wanted


def _changed_only(ssn: Session, rebuilt: set[str], report: Callable[[str], bool] | None) -> Callable[[str], bool]:
    """`report`, without the jobs whose status is the previous cycle's: carried unchanged (not rebuilt),
    untouched by this session (its journal), ready, not pending (enqueue may move a pending job)."""
    journal = ssn.journal

    def wanted(uid: str) -> bool:
        if report is not None and not report(uid):
            return False
        job = ssn.jobs.get(uid)
        if job is None or uid in rebuilt or journal is None or journal.touched(job):
            return True
        return job.is_pending() or not job.is_ready()

    return wanted


def apply_result(snapshot: ClusterSnapshot, result: CycleResult) -> ClusterSnapshot:
    """The cluster after the decisions take effect: bound pods Running on their node with the bind's
    annotations, evicted pods gone, PodGroup phases and conditions as written (what `--cycles N` feeds
    the next cycle)."""
    binds, annotations = result.binds, result.bind_annotations
    evicted = set(result.evictions)
    pods = tuple(
        msgspec.structs.replace(
            pod,
            node_name=binds[pod.key],
            phase="Running",
            annotations={**pod.annotations, **annotations[pod.key]} if pod.key in annotations else pod.annotations,
        )
        if pod.key in binds
        else pod
        for pod in snapshot.pods
        if pod.key not in evicted
    )
    podgroups = tuple(
        replace(pg, phase=result.podgroups[pg.key].phase, conditions=result.podgroups[pg.key].conditions)
        if pg.key in result.podgroups
        else pg
        for pg in snapshot.podgroups
    )
    return replace(snapshot, pods=pods, podgroups=podgroups)

"""Whole lifecycles through `decide` in a tiny simulated world (plans applied, scheduler and kubelet
faked as data edits): maxRetry exhaustion, suspend/resume, RestartTask, and no write loops."""

from __future__ import annotations

from dataclasses import dataclass, field

from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import DEPS, NOW, job, task
from vc_job_controller.logic import JobView, Plan, Request
from vc_job_controller.logic.decision import decide
from vc_proto.batch import Job, LifecyclePolicy
from vc_proto.core import Pod, PodStatus
from vc_proto.scheduling import PodGroup, PodGroupStatus
from vc_proto.vocabulary import Action, Event, JobPhase

MAX_STEPS = 20


@dataclass
class World:
    job: Job
    pods: dict[str, Pod] = field(default_factory=dict)
    podgroup: PodGroup | None = None
    history: list[str] = field(default_factory=list)

    @property
    def phase(self) -> str:
        status = self.job.status
        return (status.state.phase if status and status.state else None) or ""

    def decide(self, request: Request | None = None) -> Plan:
        plan = decide(JobView(self.job, dict(self.pods), self.podgroup), request or Request(), NOW, deps=DEPS)
        self.apply(plan)
        return plan

    def apply(self, plan: Plan) -> None:
        for deletion in plan.pods_to_delete:
            self.pods.pop(deletion.name, None)
        for created in plan.pods_to_create:
            name = created.metadata.name or ""
            meta = replace(created.metadata, uid=f"uid-{name}-{len(self.history)}")
            self.pods[name] = replace(created, metadata=meta, status=PodStatus(phase="Pending"))
        if plan.podgroup_to_delete:
            self.podgroup = None
        if plan.podgroup_to_create is not None:
            self.podgroup = plan.podgroup_to_create
        if plan.podgroup_to_update is not None:
            self.podgroup = plan.podgroup_to_update
        if plan.status is not None:
            self.job = replace(self.job, status=plan.status)
            if self.phase and (not self.history or self.history[-1] != self.phase):
                self.history.append(self.phase)

    def schedule(self) -> None:
        """The scheduler admits a Pending PodGroup."""
        if self.podgroup is not None and (
            self.podgroup.status is None or self.podgroup.status.phase in (None, "Pending")
        ):
            self.podgroup = replace(self.podgroup, status=PodGroupStatus(phase="Inqueue"))

    def set_pods(self, phase: str, *, task_name: str | None = None) -> None:
        for name, pod in list(self.pods.items()):
            if task_name is None or f"-{task_name}-" in name:
                self.pods[name] = replace(pod, status=PodStatus(phase=phase))

    def settle(self) -> None:
        """Sync until nothing changes; a plan that never settles is a write loop."""
        for _ in range(MAX_STEPS):
            self.schedule()
            plan = self.decide()
            if plan.status is None and not (plan.pods_to_create or plan.pods_to_delete or plan.podgroup_to_create):
                return
        raise AssertionError(f"no fixpoint after {MAX_STEPS} syncs: {self.history}")

    def version(self) -> int:
        return (self.job.status.version if self.job.status else None) or 0


def evict_policy_job(max_retry: int = 2) -> Job:
    policies = [LifecyclePolicy(event=Event.POD_EVICTED, action=Action.RESTART_JOB)]
    return job([task("w", 2)], policies=policies, max_retry=max_retry)


def started(j: Job) -> World:
    world = World(j)
    world.settle()
    world.set_pods("Running")
    world.settle()
    assert world.phase == JobPhase.RUNNING
    return world


def evict(world: World, name: str) -> Plan:
    world.pods.pop(name)
    request = Request(event=Event.POD_EVICTED, pod_name=name, task_name="w", job_version=world.version())
    return world.decide(request)


def test_new_job_reaches_running_then_completed() -> None:
    world = started(job([task("w", 2)]))
    world.set_pods("Succeeded")
    world.settle()
    assert world.history == ["Pending", "Running", "Completed"]


def test_evictions_restart_until_max_retry_then_fail() -> None:
    world = started(evict_policy_job(max_retry=2))
    evict(world, "job-w-0")
    assert world.phase == JobPhase.RESTARTING and world.version() == 1
    world.settle()
    world.set_pods("Running")
    world.settle()
    assert world.phase == JobPhase.RUNNING
    evict(world, "job-w-1")
    world.settle()
    assert world.phase == JobPhase.FAILED
    assert world.history == ["Pending", "Running", "Restarting", "Pending", "Running", "Restarting", "Failed"]
    status = world.job.status
    assert status is not None and status.retry_count == 2
    assert status.state is not None and status.state.reason == "MaxRetryExceeded"


def test_suspend_and_resume_with_commands() -> None:
    world = started(job([task("w", 2)]))
    world.decide(Request(event=Event.COMMAND_ISSUED, action=Action.ABORT_JOB))
    world.settle()
    assert world.phase == JobPhase.ABORTED and world.pods == {} and world.podgroup is None
    world.decide(Request(event=Event.COMMAND_ISSUED, action=Action.RESUME_JOB))
    world.settle()
    world.set_pods("Running")
    world.settle()
    assert world.history == ["Pending", "Running", "Aborting", "Aborted", "Restarting", "Pending", "Running"]
    assert world.job.status is not None and world.job.status.retry_count == 1


def test_restart_task_recreates_only_that_task() -> None:
    policies = [LifecyclePolicy(event=Event.POD_FAILED, action=Action.RESTART_TASK)]
    world = started(job([task("ps", 1), task("w", 2, policies=policies)]))
    old_ps_uid = world.pods["job-ps-0"].metadata.uid
    world.pods["job-w-1"] = replace(world.pods["job-w-1"], status=PodStatus(phase="Failed"))
    plan = world.decide(Request(event=Event.POD_FAILED, pod_name="job-w-1", task_name="w", job_version=0))
    assert {d.name for d in plan.pods_to_delete} == {"job-w-0", "job-w-1"}
    assert world.podgroup is not None  # kept for a targeted restart
    world.settle()
    assert sorted(world.pods) == ["job-ps-0", "job-w-0", "job-w-1"]
    assert world.pods["job-ps-0"].metadata.uid == old_ps_uid
    world.set_pods("Running")
    world.settle()
    assert world.phase == JobPhase.RUNNING


def test_finished_jobs_do_not_loop() -> None:
    world = started(job([task("w", 2)]))
    world.set_pods("Succeeded")
    world.settle()
    for request in (Request(event=Event.OUT_OF_SYNC), Request(event=Event.POD_EVICTED, pod_name="job-w-0")):
        plan = world.decide(request)
        assert plan.status is None and plan.pods_to_delete == () and plan.pods_to_create == ()

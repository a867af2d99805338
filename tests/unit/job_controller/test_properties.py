"""Properties of `decide` over generated jobs, pods and requests: it never raises, its names fit,
it never both creates and deletes a pod, and replaying its own plan reaches a fixpoint."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import DEPS, NOW, job, pod, podgroup, task
from vc_job_controller.logic import JobView, Plan, Request
from vc_job_controller.logic.decision import decide
from vc_job_controller.logic.names import MAX_NAME_LENGTH
from vc_proto.batch import Job, LifecyclePolicy
from vc_proto.core import Pod
from vc_proto.vocabulary import Action, Event, JobPhase

PHASES = ["", *[p.value for p in JobPhase]]
POD_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Unknown"]
ACTIONS = ["", *[a.value for a in Action if a not in (Action.SYNC_QUEUE, Action.OPEN_QUEUE, Action.CLOSE_QUEUE)]]
PLUGIN_SETS: list[dict[str, list[str]] | None] = [None, {"svc": [], "env": []}, {"ssh": [], "svc": []}]
EVENTS = ["", *[e.value for e in Event if e != Event.ANY]]


@st.composite
def worlds(draw: st.DrawFn) -> tuple[Job, dict[str, Pod], str | None]:
    name = draw(st.sampled_from(["j", "a-rather-long-job-name-" * 3]))
    replicas = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    policies = [LifecyclePolicy(event=draw(st.sampled_from(EVENTS[1:])), action=draw(st.sampled_from(ACTIONS[1:])))]
    tasks = [task(f"t{i}", r, min_available=draw(st.none() | st.integers(0, r))) for i, r in enumerate(replicas)]
    j = job(
        tasks,
        name=name,
        phase=draw(st.sampled_from(PHASES)),
        min_available=draw(st.integers(0, sum(replicas))),
        retry_count=draw(st.integers(0, 4)),
        version=draw(st.integers(0, 2)),
        policies=policies,
        plugins=draw(st.sampled_from(PLUGIN_SETS)),
    )
    pods: dict[str, Pod] = {}
    for i, r in enumerate(replicas):
        for index in range(r + draw(st.integers(0, 1))):
            if draw(st.booleans()):
                p = pod(j, f"t{i}", index, draw(st.sampled_from(POD_PHASES)), terminating=draw(st.booleans()))
                pods[p.metadata.name or ""] = p
    return j, pods, draw(st.sampled_from([None, "Pending", "Inqueue", "Running"]))


requests = st.builds(
    Request,
    event=st.sampled_from(EVENTS),
    action=st.sampled_from(ACTIONS),
    task_name=st.sampled_from(["", "t0", "t1"]),
    pod_name=st.sampled_from(["", "j-t0-0"]),
    exit_code=st.integers(0, 2),
    job_version=st.integers(0, 2),
)


def make_view(j: Job, pods: dict[str, Pod], pg_phase: str | None) -> JobView:
    return JobView(j, pods, podgroup(j, pg_phase) if pg_phase else None)


def apply(j: Job, pods: dict[str, Pod], plan: Plan) -> tuple[Job, dict[str, Pod]]:
    pods = {n: p for n, p in pods.items() if n not in {d.name for d in plan.pods_to_delete}}
    pods |= {p.metadata.name or "": p for p in plan.pods_to_create}
    return (replace(j, status=plan.status) if plan.status else j), pods


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), requests)
def test_decide_is_total_and_its_names_fit(world: tuple[Job, dict[str, Pod], str | None], request: Request) -> None:
    j, pods, pg_phase = world
    plan = decide(make_view(j, pods, pg_phase), request, NOW, deps=DEPS)
    created = {p.metadata.name for p in plan.pods_to_create}
    assert not created & {d.name for d in plan.pods_to_delete}
    assert not created & set(pods)
    names = [*created, *(w.obj.metadata.name for w in plan.objects_to_write)]
    if plan.podgroup_to_create is not None:
        names.append(plan.podgroup_to_create.metadata.name)
    assert all(name and len(name) <= MAX_NAME_LENGTH for name in names)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_syncing_reaches_a_fixpoint(world: tuple[Job, dict[str, Pod], str | None]) -> None:
    """With pods frozen in their phases, repeated SyncJobs settle within a few steps (no write loop)."""
    j, pods, pg_phase = world
    for _ in range(6):
        plan = decide(make_view(j, pods, pg_phase), Request(), NOW, deps=DEPS)
        if plan.status is None and not plan.pods_to_create and not plan.pods_to_delete:
            return
        j, pods = apply(j, pods, plan)
        # deleted pods are gone, created pods appear Pending and do not move
        pods = {n: p if p.status else replace(p, status=pod(j, "t0", 0, "Pending").status) for n, p in pods.items()}
    raise AssertionError("no fixpoint after 6 syncs")

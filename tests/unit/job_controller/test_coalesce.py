"""One pass for a run of requests that can only cause a SyncJob; everything a policy could act on alone
and in order; the merged pass ends where one pass per request does, with every pod's transition."""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from tests.unit.job_controller.jc_builders import NOW, job, pod, podgroup, pods, run, task, view
from vc_bus.testing import MemoryStore
from vc_core.times import rfc3339
from vc_job_controller.controller import (
    COUNTS_EVERY_S,
    COUNTS_SETTLE_S,
    STARTING_WAIT_S,
    JobController,
    ResyncDue,
)
from vc_job_controller.logic.coalesce import MAX_MERGED, mergeable, take_pass
from vc_job_controller.logic.podgroup import build_podgroup
from vc_job_controller.logic.pods import build_job_pod
from vc_job_controller.logic.view import DelayedAction, Request
from vc_proto.batch import Job, LifecyclePolicy
from vc_proto.core import Pod
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroupStatus, Queue
from vc_proto.vocabulary import Action, Event, JobPhase
from vc_runtime.sharding import SoleOwner


def running(name: str, previous: str = "Pending") -> Request:
    return Request(event=Event.POD_RUNNING, pod_name=name, task_name="w", previous_phase=previous)


def test_a_run_of_syncs_is_one_pass_and_a_policy_event_stops_it_and_runs_alone() -> None:
    j = job([task("w", 4)], phase=JobPhase.RUNNING)
    failed = Request(event=Event.POD_FAILED, pod_name="job-w-2", task_name="w", previous_phase="Running")
    syncs = [running("job-w-0"), Request(event=Event.OUT_OF_SYNC), Request(), running("job-w-1")]
    queue = deque([*syncs, failed, running("job-w-3")])
    assert take_pass(j, queue, {}) == syncs
    assert take_pass(j, queue, {}) == [failed]
    assert take_pass(j, queue, {}) == [running("job-w-3")] and not queue


def test_commands_fired_delays_and_policy_events_are_never_merged() -> None:
    j = job([task("w", 2)], phase=JobPhase.RUNNING)
    never = [
        Request(event=Event.COMMAND_ISSUED, action=Action.ABORT_JOB),
        Request(event=Event.POD_PENDING, action=Action.RESTART_JOB, pod_name="job-w-0", delayed_key="job-w-0"),
        Request(event=Event.POD_FAILED, pod_name="job-w-0"),
        Request(event=Event.POD_EVICTED, pod_name="job-w-0"),
        Request(event=Event.TASK_COMPLETED, task_name="w"),
        Request(event=Event.TASK_FAILED, task_name="w"),
        Request(event=Event.JOB_UNKNOWN),
    ]
    for request in never:
        assert not mergeable(j, request, {})
        queue = deque([request, running("job-w-1")])
        assert take_pass(j, queue, {}) == [request]


def test_a_pending_pod_with_a_timed_policy_and_a_start_that_cancels_a_delay_run_alone() -> None:
    timed = LifecyclePolicy(event=Event.POD_PENDING, action=Action.RESTART_JOB, timeout="1m")
    j = job([task("w", 2)], phase=JobPhase.RUNNING, policies=[timed])
    pending = Request(event=Event.POD_PENDING, pod_name="job-w-0", task_name="w", previous_phase="")
    assert not mergeable(j, pending, {})
    plain = job([task("w", 2)], phase=JobPhase.RUNNING)
    delayed = {
        "job-w-1": DelayedAction(
            key="job-w-1",
            action=Action.RESTART_JOB,
            event=Event.POD_FAILED,
            pod_name="job-w-1",
            delay=timedelta(minutes=1),
        )
    }
    assert not mergeable(plain, running("job-w-1"), delayed)  # it cancels the delayed PodFailed action
    assert mergeable(plain, running("job-w-0"), delayed)


def test_a_pass_merges_at_most_max_merged() -> None:
    j = job([task("w", 1)], phase=JobPhase.RUNNING)
    queue = deque(Request(event=Event.OUT_OF_SYNC, pod_name=f"p{i}") for i in range(MAX_MERGED + 5))
    assert len(take_pass(j, queue, {})) == MAX_MERGED and len(queue) == 5


def test_the_merged_pass_records_every_pods_transition() -> None:
    j = job([task("w", 3)], phase=JobPhase.PENDING)
    v = view(j, pods(*(pod(j, "w", i) for i in range(3))), podgroup(j, "Running"))
    plan = run(v, running("job-w-0"), merged=[running("job-w-1"), Request(event=Event.OUT_OF_SYNC), running("job-w-2")])
    started = [(e.name, e.previous_phase, e.phase) for e in plan.events if e.kind == "Pod"]
    assert started == [(f"job-w-{i}", "Pending", "Running") for i in range(3)]
    assert plan.status is not None and plan.status.state is not None and plan.status.state.phase == JobPhase.RUNNING


PHASES = ("Pending", "Running", "Succeeded")


def settle(j: Job, pod_map: dict[str, Pod], passes: list[tuple[Request, list[Request]]]) -> tuple[object, list[object]]:
    """Run the passes, then OutOfSync passes (what the job's own status changes raise) until the status
    stops changing: the final status and every history record."""
    status, records = j.status, []
    for _ in range(10):
        before = status
        for request, merged in passes:
            plan = run(view(replace(j, status=status), pod_map, podgroup(j, "Running")), request, merged=merged)
            records += plan.events
            status = plan.status or status
        if status == before:
            return status, records
        passes = [(Request(event=Event.OUT_OF_SYNC), [])]
    raise AssertionError("the job never settled")


@settings(max_examples=60, deadline=None)
@given(
    start=st.lists(st.sampled_from(PHASES), min_size=1, max_size=5),
    moves=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(PHASES)), max_size=8),
)
def test_one_merged_pass_ends_where_one_pass_per_request_does(start: list[str], moves: list[tuple[int, str]]) -> None:
    """Pods change phase; each change raised a request. Handling them one pass each (every pass sees the
    newest view, as the shell's caches hold every change by then) or as one merged pass settles the job
    in the same status with the same history records."""
    j = job([task("w", len(start))], phase=JobPhase.RUNNING)
    current = dict(enumerate(start))
    requests = []
    for index, phase in moves:
        index %= len(start)
        previous, current[index] = current[index], phase
        event = {"Running": Event.POD_RUNNING, "Pending": Event.POD_PENDING}.get(phase, Event.OUT_OF_SYNC)
        requests.append(Request(event=event, pod_name=f"job-w-{index}", task_name="w", previous_phase=previous))
    requests = [r for r in requests if mergeable(j, r, {})] or [Request(event=Event.OUT_OF_SYNC)]
    pod_map = pods(*(pod(j, "w", i, phase) for i, phase in current.items()))

    one_each = settle(j, pod_map, [(r, []) for r in requests])
    merged = settle(j, pod_map, [(requests[0], requests[1:])])

    assert merged[0] == one_each[0]
    key = lambda e: (e.kind, e.name, e.reason, e.previous_phase, e.phase)  # noqa: E731
    assert sorted(map(key, merged[1])) == sorted(map(key, one_each[1]))
    assert all(e.occurred_at == NOW.strftime("%Y-%m-%dT%H:%M:%SZ") for e in merged[1])


async def controller_with_a_gang(store: MemoryStore, publish: object, gang: Job) -> JobController:
    """A controller whose caches hold the default queue, `gang` (4 pods of task w, created) and its
    PodGroup, Running: as its watches would have delivered them."""
    controller = JobController(store, publish, SoleOwner(), source="test")  # type: ignore[arg-type]
    default = Queue(api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name="default"))
    controller.queues.remember(await store.create(default))
    j = await store.create(gang)
    controller.jobs.remember(j)
    group = await store.create(build_podgroup(j, {}))
    controller.podgroups.remember(replace(group, status=PodGroupStatus(phase="Running")))
    for i in range(4):
        controller.pods.remember(await store.create(build_job_pod(j, j.spec.tasks[0], i)))  # type: ignore[index, union-attr]
    return controller


KEY = ("ns", "job")


async def pending_gang(store: MemoryStore, publish: object) -> JobController:
    """A controller holding a Pending job "job" whose gang of four (minAvailable 4) is created."""
    gang = job([task("w", 4)], name="job", phase=JobPhase.PENDING, min_available=4)
    return await controller_with_a_gang(store, publish, gang)


async def run_passes(controller: JobController, store: MemoryStore) -> Job:
    """Run the job's passes until none is pending (its writes delivered back, as its watch would)."""
    while KEY in controller.pending:
        await controller._handle(KEY)
        controller.jobs.remember(await store.get(Job, "ns", "job"))
    return await store.get(Job, "ns", "job")


async def start(controller: JobController, store: MemoryStore, i: int) -> None:
    old = controller.pods.get("ns", f"job-w-{i}")
    assert old is not None and old.status is not None
    controller.pods.remember(await store.update(replace(old, status=replace(old.status, phase="Running"))))


def test_the_controller_handles_a_gang_starting_in_one_pass_with_one_history_batch() -> None:
    async def scenario() -> None:
        store, batches = MemoryStore(), []

        async def publish(events: object) -> int:
            batches.append(list(events))  # type: ignore[call-overload]
            return 0

        controller = await controller_with_a_gang(
            store, publish, job([task("w", 4)], name="job", phase=JobPhase.RUNNING)
        )
        key = ("ns", "job")
        while key in controller.pending:
            await controller._handle(key)
        batches.clear()
        for i in range(4):
            old = controller.pods.get("ns", f"job-w-{i}")
            assert old is not None
            started = await store.update(replace(old, status=replace(old.status, phase="Running")))  # type: ignore[arg-type]
            controller.pods.remember(started)  # as the watch would deliver it
        assert len(controller.pending[key]) == 4
        await controller._handle(key)
        # The four PodRunning requests were one pass (what may follow comes from the job's own write).
        assert not [r for r in controller.pending.get(key, ()) if r.pod_name]
        assert [[(e.name, e.reason) for e in batch if e.kind == "Pod"] for batch in batches] == [
            [(f"job-w-{i}", "PodStarted") for i in range(4)]
        ]

    asyncio.run(scenario())


def test_the_controller_holds_a_count_change_until_it_settles_and_stamps_its_task_events_when_first_seen() -> None:
    async def scenario() -> None:
        store, events = MemoryStore(), []

        async def publish(batch: object) -> int:
            events.extend(batch)  # type: ignore[call-overload]
            return 0

        controller = await pending_gang(store, publish)
        key = KEY

        def task_phases() -> list[tuple[str | None, str | None]]:
            return [(e.phase, e.occurred_at) for e in events if e.kind == "Task"]

        await run_passes(controller, store)
        written = (await store.get(Job, "ns", "job")).status
        events.clear()
        await start(controller, store, 0)  # the task's first Running pod: counts (and the task's phase) alone, held
        assert (
            (await run_passes(controller, store)).status == written
            and key in controller.resync_armed
            and not task_phases()
        )
        first_seen, task_seen = controller.status_holds.held_since[key], controller.held_tasks[key]
        assert task_seen == {"w": ("Running", task_seen["w"][1])}
        await start(controller, store, 1)  # still settling: held with the first
        assert (await run_passes(controller, store)).status == written and controller.status_holds.held_since[
            key
        ] == first_seen
        assert controller.held_tasks[key] == task_seen  # the same task phase: still first seen then
        # the hold is over (a Pending job's gang coming up waits STARTING_WAIT_S): the sync writes what it
        # finds, the task's change stamped when it was first held
        controller.status_holds.held_since[key] = first_seen - STARTING_WAIT_S
        if key in controller.status_holds.written_at:
            controller.status_holds.written_at[key] -= COUNTS_EVERY_S
        await controller._handle(ResyncDue(key))
        assert (await run_passes(controller, store)).status.running == 2 and key not in controller.resync_armed  # type: ignore[union-attr]
        assert task_phases() == [("Running", rfc3339(task_seen["w"][1]))]
        assert key not in controller.status_holds.held_since and key not in controller.held_tasks
        await start(controller, store, 2)
        await start(controller, store, 3)  # minAvailable reached: the phase is written at once, counts with it
        done = await run_passes(controller, store)
        assert done.status.running == 4 and done.status.state.phase == JobPhase.RUNNING  # type: ignore[union-attr]
        assert key not in controller.status_holds.held_since

    asyncio.run(scenario())


def test_a_pending_jobs_gang_coming_up_waits_so_the_job_writes_once_when_it_runs() -> None:
    """A gang's pods are created as soon as its PodGroup is Inqueue and start once bound, over seconds
    on a busy cluster: while the job is Pending its count changes wait up to STARTING_WAIT_S, and the
    job's phase change when minAvailable pods run carries them (one status write, not three)."""

    async def scenario() -> None:
        store = MemoryStore()

        async def publish(events: object) -> int:
            return 0

        controller = await pending_gang(store, publish)
        key = KEY
        before = await store.get(Job, "ns", "job")
        assert (await run_passes(controller, store)).status == before.status  # four pods created, none started: held
        assert controller._gang_starting(key, before)
        since = controller.status_holds.held_since[key]
        assert controller.resync_armed[key] >= since + STARTING_WAIT_S
        # Past the ordinary settle the resync still holds it.
        controller.status_holds.held_since[key] = since - 2 * COUNTS_SETTLE_S
        controller.status_holds.written_at.pop(key, None)
        await controller._handle(ResyncDue(key))
        assert (await run_passes(controller, store)).status == before.status
        for i in range(4):
            await start(controller, store, i)
            if i < 3:  # starting, short of minAvailable: still held, even past the ordinary settle
                controller.status_holds.held_since[key] -= 2 * COUNTS_SETTLE_S
                assert (await run_passes(controller, store)).status == before.status
        after = await run_passes(controller, store)
        assert after.status is not None and after.status.state is not None
        assert after.status.state.phase == JobPhase.RUNNING and after.status.running == 4 and after.status.pending == 0
        assert int(after.metadata.resource_version or 0) == int(before.metadata.resource_version or 0) + 1
        assert key not in controller.status_holds.held_since

    asyncio.run(scenario())


def test_pods_created_and_never_started_are_written_after_starting_wait_s() -> None:
    async def scenario() -> None:
        store = MemoryStore()

        async def publish(events: object) -> int:
            return 0

        controller = await pending_gang(store, publish)
        await run_passes(controller, store)
        controller.status_holds.held_since[KEY] -= STARTING_WAIT_S
        await controller._handle(ResyncDue(KEY))
        written = await run_passes(controller, store)
        assert written.status is not None and written.status.pending == 4
        assert written.status.state is not None and written.status.state.phase == JobPhase.PENDING

    asyncio.run(scenario())


def test_a_hold_is_forgotten_when_another_instance_owns_the_job() -> None:
    """Its times would be stale should the job come back: the first change then would skip its settle
    and its task records would be stamped minutes early."""

    class Elsewhere(SoleOwner):
        def owns(self, key: str) -> bool:
            return False

    async def scenario() -> None:
        store = MemoryStore()

        async def publish(events: object) -> int:
            return 0

        gang = job([task("w", 4)], name="job", phase=JobPhase.PENDING, min_available=4)
        controller = await controller_with_a_gang(store, publish, gang)
        key = ("ns", "job")
        while key in controller.pending:
            await controller._handle(key)
            controller.jobs.remember(await store.get(Job, "ns", "job"))
        old = controller.pods.get("ns", "job-w-0")
        assert old is not None and old.status is not None
        controller.pods.remember(await store.update(replace(old, status=replace(old.status, phase="Running"))))
        await controller._handle(key)
        assert key in controller.status_holds.held_since and key in controller.held_tasks
        controller.membership = Elsewhere()
        await controller._handle(ResyncDue(key))
        assert key not in controller.status_holds.held_since and key not in controller.held_tasks

    asyncio.run(scenario())

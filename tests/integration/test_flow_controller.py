"""The flow controller on a real nats-server, in this event loop, with the job phases written by the test
(the job controller's part) and the clock injected (no test waits for a schedule).

Volcano's example JobFlow (a -> b -> {c, d} -> e, jobRetainPolicy: delete) runs job by job to Succeed
and then removes its jobs; deleting a flow or a CronJob takes its jobs along; Volcano's example CronJob
starts one job per due time, skips while one runs (Forbid), keeps its history within the limits, and
after a controller restart runs only the most recent missed time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import pytest

from tests.support.inprocess import WriteLog, memberships_settled, run_app
from tests.support.services import ServiceProcess
from tests.support.waiting import eventually
from tests.unit.flow_controller.builders import example_cronjob, example_flow, example_templates
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import NotFound
from vc_flow_controller.app import FlowControllerApp
from vc_flow_controller.metrics import NOTES, STATUS_WRITES
from vc_proto.batch import Job, JobState, JobStatus
from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus
from vc_validation import mutate_cronjob

pytestmark = [pytest.mark.nats, pytest.mark.integration]
NS = "default"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@contextlib.asynccontextmanager
async def running(url: str, clock: Clock, instance: str = "flow-a") -> AsyncIterator[FlowControllerApp]:
    async with run_app(lambda s: FlowControllerApp(s, clock=clock), "flow-controller", url, instance) as app:
        yield app


async def jobs(store: NatsStore) -> dict[str, Job]:
    items, _ = await store.list(Job, NS)
    return {job.metadata.name or "": job for job in items}


async def names(store: NatsStore) -> set[str]:
    return set(await jobs(store))


async def finish(store: NatsStore, name: str, phase: str = "Completed", at: str = "2026-01-01T00:00:00Z") -> None:
    """What the job controller would write once the job's pods ended."""
    job = await store.get(Job, NS, name)
    state = JobState(phase=phase, last_transition_time=at)
    await store.update(msgspec.structs.replace(job, status=JobStatus(state=state)))


async def flow_phase(store: NatsStore, name: str = "test") -> str:
    flow = await store.get(JobFlow, NS, name)
    return (flow.status.state.phase if flow.status and flow.status.state else None) or ""


async def absent(store: NatsStore, kind: type[Job], name: str) -> bool:
    try:
        await store.get(kind, NS, name)
    except NotFound:
        return True
    return False


async def default_queue(store: NatsStore) -> None:
    """The queue Volcano's examples name (`vcctl up` makes it; the created jobs are judged against it)."""
    spec = QueueSpec(weight=1, reclaimable=True)
    meta = ObjectMeta(name="default")
    await store.create(
        Queue(api_version=SCHEDULING_V1BETA1, metadata=meta, spec=spec, status=QueueStatus(state="Open"))
    )


async def create_example_flow(store: NatsStore) -> JobFlow:
    await default_queue(store)
    for template in example_templates().values():
        await store.create(template)
    flow = example_flow()
    return await store.create(msgspec.structs.replace(flow, metadata=msgspec.structs.replace(flow.metadata, uid=None)))


async def test_the_example_flow_runs_in_dependency_order_to_succeed_then_deletes_its_jobs(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    async with running(nats_server.url, clock) as app:
        await create_example_flow(nats_store)
        await eventually(lambda: _equals(names(nats_store), {"test-a"}))
        await finish(nats_store, "test-a")
        await eventually(lambda: _equals(names(nats_store), {"test-a", "test-b"}))
        await finish(nats_store, "test-b")
        await eventually(lambda: _equals(names(nats_store), {"test-a", "test-b", "test-c", "test-d"}))
        await finish(nats_store, "test-c")
        await eventually(lambda: _completed(nats_store, "test-c"))  # a pass saw c done: e still needs d
        assert "test-e" not in await names(nats_store)
        await finish(nats_store, "test-d")
        await eventually(lambda: _contains(names(nats_store), "test-e"))
        template = await nats_store.get(JobTemplate, NS, "a")
        assert template.status is not None and template.status.job_depends_on_list == ["test-a"]
        await finish(nats_store, "test-e")
        await eventually(lambda: _equals(flow_phase(nats_store), "Succeed"))
        await eventually(lambda: _equals(names(nats_store), set()))  # jobRetainPolicy: delete
        flow = await nats_store.get(JobFlow, NS, "test")
        assert flow.status is not None and [e.name for e in flow.status.job_status_list or []] == [
            f"test-{t}" for t in "abcde"
        ]
        assert all(e.state == "Completed" for e in flow.status.job_status_list or [])
        # Settled: more passes over everything write nothing (a status is written only when it changes).
        writes = {kind: STATUS_WRITES.labels(kind)._value.get() for kind in ("JobFlow", "JobTemplate")}
        handled = app.dispatcher.statistics().handled
        app.resync()
        await eventually(lambda: _above(lambda: app.dispatcher.statistics().handled, handled + 5))
        assert {kind: STATUS_WRITES.labels(kind)._value.get() for kind in writes} == writes


async def test_a_failed_job_fails_the_flow_and_nothing_after_it_starts(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    async with running(nats_server.url, Clock(datetime(2026, 1, 1, tzinfo=UTC))):
        await create_example_flow(nats_store)
        await eventually(lambda: _contains(names(nats_store), "test-a"))
        await finish(nats_store, "test-a", "Failed")
        await eventually(lambda: _equals(flow_phase(nats_store), "Failed"))
        assert await names(nats_store) == {"test-a"}


async def test_deleting_a_flow_deletes_its_jobs(nats_server: NatsServer, nats_store: NatsStore) -> None:
    async with running(nats_server.url, Clock(datetime(2026, 1, 1, tzinfo=UTC))):
        await create_example_flow(nats_store)
        await eventually(lambda: _contains(names(nats_store), "test-a"))
        await nats_store.delete(JobFlow, NS, "test")
        await eventually(lambda: absent(nats_store, Job, "test-a"))


async def create_cronjob(store: NatsStore, clock: Clock, **spec: object) -> CronJob:
    await default_queue(store)
    cronjob = example_cronjob(**spec)
    meta = msgspec.structs.replace(cronjob.metadata, uid=None, creation_timestamp=None)
    stored = await store.create(mutate_cronjob(msgspec.structs.replace(cronjob, metadata=meta)))
    # The store stamps the real creation time; the clock starts there, so schedules count from it.
    clock.now = datetime.fromisoformat((stored.metadata.creation_timestamp or "").replace("Z", "+00:00"))
    return stored


def five_minutes_after(moment: datetime) -> datetime:
    return moment.replace(minute=moment.minute - moment.minute % 5, second=0) + timedelta(minutes=5)


async def test_the_example_cronjob_runs_per_schedule_forbids_overlap_and_keeps_its_history(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    async with running(nats_server.url, clock) as app:
        await create_cronjob(nats_store, clock)
        first = five_minutes_after(clock.now)
        clock.now = first + timedelta(seconds=10)
        app.resync()
        await eventually(lambda: _length(names(nats_store), 1))
        (name,) = await names(nats_store)
        assert name == f"volcano-cronjob-example-{int(first.timestamp()) // 60}"
        await eventually(lambda: _active(nats_store, 1))
        clock.now = first + timedelta(minutes=5, seconds=10)  # the first still runs: Forbid skips this time
        skipped = NOTES.labels("CronJob", "ForbidConcurrent")._value.get()
        app.resync()
        await eventually(lambda: _above(lambda: NOTES.labels("CronJob", "ForbidConcurrent")._value.get(), skipped))
        assert await names(nats_store) == {name}
        previous = name
        for run in range(2, 8):  # six more runs, each after the previous finished: history keeps 5
            due = first + timedelta(minutes=5 * run)
            clock.now = due + timedelta(seconds=10)
            # Finished only now: at first + 5m10s, first + 5m would still be within the 60 s deadline.
            await finish(nats_store, previous, at=clock.now.strftime("%Y-%m-%dT%H:%M:%SZ"))
            app.resync()
            await eventually(lambda due=due: _last_schedule(nats_store, due))  # type: ignore[misc]
            previous = f"volcano-cronjob-example-{int(due.timestamp()) // 60}"
        await finish(nats_store, previous, at=clock.now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        app.resync()
        await eventually(lambda: _length(names(nats_store), 5))
        cronjob = await nats_store.get(CronJob, NS, "volcano-cronjob-example")
        assert cronjob.status is not None and not cronjob.status.active and cronjob.status.last_successful_time


async def test_a_restart_after_missed_times_runs_only_the_most_recent(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    async with running(nats_server.url, clock):
        await create_cronjob(nats_store, clock, startingDeadlineSeconds=None, concurrencyPolicy="Allow")
    start = clock.now
    clock.now = start + timedelta(hours=2, seconds=30)  # the controller was down for 2 hours: 24 times missed
    async with running(nats_server.url, clock, instance="flow-b"):
        await eventually(lambda: _length(names(nats_store), 1))
        (name,) = await names(nats_store)
        due = five_minutes_after(clock.now - timedelta(minutes=5))
        assert name == f"volcano-cronjob-example-{int(due.timestamp()) // 60}"


async def test_deleting_a_cronjob_deletes_its_jobs(nats_server: NatsServer, nats_store: NatsStore) -> None:
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    async with running(nats_server.url, clock) as app:
        await create_cronjob(nats_store, clock)
        clock.now = five_minutes_after(clock.now) + timedelta(seconds=1)
        app.resync()
        await eventually(lambda: _length(names(nats_store), 1))
        await nats_store.delete(CronJob, NS, "volcano-cronjob-example")
        await eventually(lambda: _length(names(nats_store), 0))


# -- conditions ---------------------------------------------------------------------------------------
async def _equals(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


async def _contains(value: Awaitable[set[str]], item: str) -> bool:
    return item in await value


async def _length(value: Awaitable[set[str]], count: int) -> bool:
    return len(await value) == count


async def _completed(store: NatsStore, job: str) -> bool:
    flow = await store.get(JobFlow, NS, "test")
    return job in ((flow.status.completed_jobs if flow.status else None) or [])


async def _above(read: Callable[[], float], floor: float) -> bool:
    return read() > floor


async def _active(store: NatsStore, count: int) -> bool:
    cronjob = await store.get(CronJob, NS, "volcano-cronjob-example")
    return len((cronjob.status.active if cronjob.status else None) or []) == count


async def _last_schedule(store: NatsStore, moment: datetime) -> bool:
    cronjob = await store.get(CronJob, NS, "volcano-cronjob-example")
    return (cronjob.status.last_schedule_time if cronjob.status else None) == moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_two_instances_share_the_flows_each_flow_written_by_one(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    log = WriteLog()
    clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    factory = lambda s: FlowControllerApp(s, clock=clock)  # noqa: E731
    async with (
        run_app(factory, "flow-controller", nats_server.url, "flow-a", log) as a,
        run_app(factory, "flow-controller", nats_server.url, "flow-b", log) as b,
    ):
        await memberships_settled(a, b)
        await create_example_flow(nats_store)  # templates a..e, and the flow `test`
        flows = [f"f{i}" for i in range(8)]
        for name in flows:
            flow = example_flow()
            spec = msgspec.structs.replace(flow.spec, flows=(flow.spec.flows or [])[:2])  # a -> b
            meta = msgspec.structs.replace(flow.metadata, name=name, uid=None)
            await nats_store.create(msgspec.structs.replace(flow, metadata=meta, spec=spec))
        for step in ("a", "b"):
            await eventually(lambda step=step: _contains_all(names(nats_store), {f"{f}-{step}" for f in flows}))
            for name in flows:
                await finish(nats_store, f"{name}-{step}")
        for name in flows:
            await eventually(lambda name=name: _equals(flow_phase(nats_store, name), "Succeed"))
        await eventually(lambda: _no_job_of(names(nats_store), flows))
        log.closed = True
    by_flow: dict[str, set[str]] = {}
    for (_, name), who in log.writers.items():
        owner = name.split("-")[0]
        if owner in flows:
            by_flow.setdefault(owner, set()).update(who)
    assert sorted(by_flow) == flows
    assert all(len(who) == 1 for who in by_flow.values()), by_flow
    assert {w for who in by_flow.values() for w in who} == {"flow-a", "flow-b"}
    assert log.conflicts == 0


async def _contains_all(value: Awaitable[set[str]], items: set[str]) -> bool:
    return items <= await value


async def _no_job_of(value: Awaitable[set[str]], flows: list[str]) -> bool:
    return not any(name.split("-")[0] in flows for name in await value)


async def test_a_killed_controller_resumes_the_flow_without_making_a_job_twice(
    nats_server: NatsServer, nats_store: NatsStore, tmp_path: Path
) -> None:
    """vc-flow-controller as its own process, SIGKILLed mid-flow: its successor finishes the flow."""

    def start() -> ServiceProcess:
        args = ["--instance", "flow-controller", "--lease-ttl", "1"]
        return ServiceProcess("vc-flow-controller", nats_server.url, args, tmp_path / "flow-controller.log").start()

    process = start()
    try:
        await process.wait_ready(timeout=60)
        await create_example_flow(nats_store)
        await eventually(lambda: _equals(names(nats_store), {"test-a"}))
        process.kill()
        await finish(nats_store, "test-a")  # while no controller runs
        process = start()
        await process.wait_ready(timeout=60)
        await eventually(lambda: _equals(names(nats_store), {"test-a", "test-b"}), timeout=30)
        first = (await jobs(nats_store))["test-a"].metadata.uid
        await finish(nats_store, "test-b")
        await eventually(lambda: _equals(names(nats_store), {"test-a", "test-b", "test-c", "test-d"}), timeout=30)
        assert (await jobs(nats_store))["test-a"].metadata.uid == first  # never deleted and made again
    finally:
        process.stop_quietly()

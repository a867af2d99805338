"""The podgroup controller on a real nats-server: plain volcano pods get a PodGroup and the group-name
annotation, once per workload, idempotently across restarts, with one writer per group."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import TypeVar

import msgspec
import pytest

from tests.support.inprocess import WriteLog, memberships_settled, run_app
from tests.support.waiting import eventually
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import NotFound
from vc_podgroup_controller.app import PodGroupControllerApp
from vc_podgroup_controller.logic.build import build_podgroup
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, ResourceRequirements
from vc_proto.kinds import KubeObject
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.scheduling import PodGroup
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION
from vc_runtime.service import App

pytestmark = [pytest.mark.nats, pytest.mark.integration]
ObjT = TypeVar("ObjT", bound=KubeObject)
T = TypeVar("T")
AppT = TypeVar("AppT", bound=App)


# -- harness: the real app in-process, its store wrapped to count writes per key ---------------------
@contextlib.asynccontextmanager
async def running(url: str, instance: str, log: WriteLog | None = None) -> AsyncIterator[PodGroupControllerApp]:
    async with run_app(PodGroupControllerApp, "podgroup-controller", url, instance, log) as app:
        yield app


# -- builders ------------------------------------------------------------------------------------------
def pod(name: str, *, scheduler: str = "volcano", owner_uid: str | None = None, queue: str | None = None) -> Pod:
    owners = None
    if owner_uid is not None:
        owners = [OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="rs", uid=owner_uid, controller=True)]
    annotations = {"scheduling.volcano.sh/queue-name": queue} if queue else None
    container = Container(name="c", image="busybox", resources=ResourceRequirements(requests={"cpu": "250m"}))
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace="default", owner_references=owners, annotations=annotations),
        spec=PodSpec(scheduler_name=scheduler, containers=[container]),
    )


async def group_of(store: NatsStore, name: str) -> str | None:
    try:
        stored = await store.get(Pod, "default", name)
    except NotFound:
        return None
    return (stored.metadata.annotations or {}).get(GROUP_NAME_ANNOTATION)


async def grouped(store: NatsStore, name: str, group: str) -> bool:
    return await group_of(store, name) == group


# -- tests ---------------------------------------------------------------------------------------------
async def test_plain_volcano_pod_gets_podgroup_and_annotation(nats_server: NatsServer, nats_store: NatsStore) -> None:
    async with running(nats_server.url, "pg-a"):
        # Created first: the pod watch delivers in order, so once "solo" has its group the controller
        # has seen "not-ours" too (no fixed wait for a thing that must not happen).
        other = await nats_store.create(pod("not-ours", scheduler="default-scheduler"))
        created = await nats_store.create(pod("solo", queue="q1"))
        group = f"podgroup-{created.metadata.uid}"
        await eventually(lambda: grouped(nats_store, "solo", group))
        podgroup = await nats_store.get(PodGroup, "default", group)
        assert podgroup.spec is not None and podgroup.status is not None
        assert (podgroup.spec.min_member, podgroup.spec.queue, podgroup.status.phase) == (1, "q1", "Pending")
        assert podgroup.spec.min_resources == {"cpu": "250m"}
        refs = podgroup.metadata.owner_references or []
        assert [(r.kind, r.uid, r.controller) for r in refs] == [("Pod", created.metadata.uid, True)]
        assert await group_of(nats_store, "not-ours") is None
        assert other.metadata.name == "not-ours"


async def test_only_pods_that_may_want_a_group_are_cached(nats_server: NatsServer, nats_store: NatsStore) -> None:
    """A vcjob's pods name their group from the start and are never decoded into the cache; a pod leaves
    it once annotated (its change is seen as a delete)."""
    async with running(nats_server.url, "pg-a") as app:
        has_group = pod("of-a-vcjob")
        annotations = {GROUP_NAME_ANNOTATION: "job-1"}
        has_group = msgspec.structs.replace(
            has_group, metadata=msgspec.structs.replace(has_group.metadata, annotations=annotations)
        )
        await nats_store.create(has_group)
        await nats_store.create(pod("other-scheduler", scheduler="default-scheduler"))
        created = await nats_store.create(pod("plain"))
        await eventually(lambda: grouped(nats_store, "plain", f"podgroup-{created.metadata.uid}"))
        await eventually(lambda: not app.controller.pods.items, what="an empty pod cache")


async def test_pods_of_one_workload_share_one_group(nats_server: NatsServer, nats_store: NatsStore) -> None:
    async with running(nats_server.url, "pg-a"):
        for i in range(3):
            await nats_store.create(pod(f"web-{i}", owner_uid="rs-1"))
        for i in range(3):
            await eventually(lambda i=i: grouped(nats_store, f"web-{i}", "podgroup-rs-1"))  # type: ignore[misc]
    groups, _ = await nats_store.list(PodGroup)
    assert [g.metadata.name for g in groups] == ["podgroup-rs-1"]


async def test_restart_after_create_before_annotate_finishes_the_job(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    created = await nats_store.create(pod("half"))
    existing = await nats_store.create(build_podgroup(created))  # a previous life got this far
    async with running(nats_server.url, "pg-a"):
        await eventually(lambda: grouped(nats_store, "half", existing.metadata.name or ""))
    again = await nats_store.get(PodGroup, "default", existing.metadata.name or "")
    assert again.metadata.resource_version == existing.metadata.resource_version  # untouched


async def test_two_instances_one_writer_per_group(nats_server: NatsServer, nats_store: NatsStore) -> None:
    log = WriteLog()
    async with running(nats_server.url, "pg-a", log) as a, running(nats_server.url, "pg-b", log) as b:
        await memberships_settled(a, b)
        for g in range(12):
            for i in range(2):
                await nats_store.create(pod(f"w{g}-{i}", owner_uid=f"owner-{g}"))
        for g in range(12):
            for i in range(2):
                await eventually(lambda g=g, i=i: grouped(nats_store, f"w{g}-{i}", f"podgroup-owner-{g}"))  # type: ignore[misc]
        log.closed = True
    by_group: dict[str, set[str]] = defaultdict(set)
    for (kind, name), who in log.writers.items():
        group = f"podgroup-owner-{name[1:].split('-')[0]}" if kind == "Pod" else name
        by_group[group] |= who
    assert len(by_group) == 12
    assert all(len(who) == 1 for who in by_group.values()), by_group
    assert {w for who in by_group.values() for w in who} == {"pg-a", "pg-b"}
    assert log.conflicts == 0


async def test_plain_pod_runs_end_to_end(nats_server: NatsServer, nats_store: NatsStore) -> None:
    """podgroup-controller + queue-controller + scheduler + node-sim: the plain pod is bound and runs."""
    # Imported here: the other services are other teams' moving code; a break there fails this test only.
    from vc_node_sim.app import NodeSimApp
    from vc_queue_controller.app import QueueControllerApp
    from vc_scheduler.app import SchedulerApp

    url = nats_server.url
    async with (
        run_app(NodeSimApp, "NodeSimApp", url, "node-sim", nodes=1, start_delay=0.05, heartbeat_period=60.0),
        run_app(QueueControllerApp, "QueueControllerApp", url, "queue-controller"),
        run_app(SchedulerApp, "SchedulerApp", url, "scheduler", schedule_period=0.2),
        running(url, "pg-a"),
    ):
        created = await nats_store.create(pod("plain"))
        await eventually(lambda: grouped(nats_store, "plain", f"podgroup-{created.metadata.uid}"))
        await eventually(lambda: _phase_in(nats_store, "plain", ("Running", "Succeeded")), timeout=20)
        bound = await nats_store.get(Pod, "default", "plain")
        assert bound.spec is not None and bound.spec.node_name == "node-0"


async def _phase_in(store: NatsStore, name: str, phases: tuple[str, ...]) -> bool:
    current = await store.get(Pod, "default", name)
    return current.status is not None and current.status.phase in phases

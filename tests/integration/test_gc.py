"""gc on a real nats-server: finished jobs go `ttlSecondsAfterFinished` after their finish time with
everything they own, across a gc restart; orphans go once their owner is proven gone; nothing goes
early; two instances collect each job from one of them."""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import pytest

from tests.support.inprocess import WriteLog, memberships_settled, run_app
from tests.support.waiting import eventually
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import NotFound
from vc_gc.app import GcApp
from vc_proto.batch import BATCH_V1ALPHA1, Job, JobSpec, JobState, JobStatus
from vc_proto.core import (
    CORE_V1,
    NETWORKING_V1,
    ConfigMap,
    NetworkPolicy,
    NetworkPolicySpec,
    Pod,
    PodSpec,
    PodStatus,
    Secret,
    Service,
)
from vc_proto.kinds import KubeObject
from vc_proto.meta import LabelSelector, ObjectMeta, OwnerReference
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup

pytestmark = [pytest.mark.nats, pytest.mark.integration]
ObjT = TypeVar("ObjT", bound=KubeObject)
T = TypeVar("T")
NS = "default"


# -- harness: the real app in-process, its store wrapped to count writes per key ---------------------
@contextlib.asynccontextmanager
async def running(url: str, instance: str, log: WriteLog | None = None, **extra: object) -> AsyncIterator[GcApp]:
    async with run_app(GcApp, "gc", url, instance, log, **extra) as app:
        yield app


# -- builders ------------------------------------------------------------------------------------------
def rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job(name: str, phase: str, *, ttl: int | None, finished: datetime | None) -> Job:
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(name=name, namespace=NS),
        spec=JobSpec(ttl_seconds_after_finished=ttl),
        status=JobStatus(state=JobState(phase=phase, last_transition_time=rfc3339(finished) if finished else None)),
    )


def owned_by(owner: KubeObject, name: str) -> ObjectMeta:
    kind = type(owner).__name__
    ref = OwnerReference(
        api_version=owner.api_version,
        kind=kind,
        name=owner.metadata.name or "",
        uid=owner.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )
    return ObjectMeta(name=name, namespace=NS, owner_references=[ref])


def dependents(owner: Job) -> list[KubeObject]:
    """What a job and its plugins create: pods (one finished on a node), PodGroup, Service, ConfigMap..."""
    name = owner.metadata.name or ""
    return [
        Pod(
            api_version=CORE_V1,
            metadata=owned_by(owner, f"{name}-task-0"),
            spec=PodSpec(node_name="node-0"),
            status=PodStatus(phase="Succeeded"),
        ),
        Pod(api_version=CORE_V1, metadata=owned_by(owner, f"{name}-task-1"), status=PodStatus(phase="Pending")),
        PodGroup(api_version=SCHEDULING_V1BETA1, metadata=owned_by(owner, f"{name}-pg")),
        Service(api_version=CORE_V1, metadata=owned_by(owner, f"{name}-svc")),
        ConfigMap(api_version=CORE_V1, metadata=owned_by(owner, f"{name}-svc-cm"), data={"hosts": "x"}),
        Secret(api_version=CORE_V1, metadata=owned_by(owner, f"{name}-ssh")),
        NetworkPolicy(
            api_version=NETWORKING_V1,
            metadata=owned_by(owner, f"{name}-np"),
            spec=NetworkPolicySpec(pod_selector=LabelSelector()),
        ),
    ]


async def create_with_dependents(store: NatsStore, j: Job) -> tuple[Job, list[KubeObject]]:
    stored = await store.create(j)
    return stored, [await store.create(d) for d in dependents(stored)]


async def exists(store: NatsStore, obj: KubeObject) -> bool:
    try:
        await store.get(type(obj), obj.metadata.namespace, obj.metadata.name or "")
    except NotFound:
        return False
    return True


async def gone(store: NatsStore, *objs: KubeObject) -> bool:
    return not any([await exists(store, o) for o in objs])


# -- tests ---------------------------------------------------------------------------------------------
async def test_ttl_job_goes_with_its_dependents_across_a_restart(
    nats_server: NatsServer, nats_store: NatsStore
) -> None:
    finished = datetime.now(UTC).replace(microsecond=0)
    done, children = await create_with_dependents(nats_store, job("done", "Completed", ttl=5, finished=finished))
    other, others = await create_with_dependents(nats_store, job("other", "Running", ttl=5, finished=finished))
    async with running(nats_server.url, "gc-a") as first_life:
        await memberships_settled(first_life)  # it owns every key now (and stops well before the TTL)
    assert await exists(nats_store, done)  # the first life stopped before the deadline
    async with running(nats_server.url, "gc-a"):
        await eventually(lambda: gone(nats_store, done), timeout=15)
        observed_gone_at = datetime.now(UTC)
        await eventually(lambda: gone(nats_store, *children))
    assert observed_gone_at >= finished + timedelta(seconds=5)  # never early
    assert all([await exists(nats_store, o) for o in (other, *others)])  # a running job and its pods stay


async def test_finish_time_in_the_future_defers_deletion(nats_server: NatsServer, nats_store: NatsStore) -> None:
    ahead = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    skewed = await nats_store.create(job("skewed", "Failed", ttl=0, finished=ahead))
    async with running(nats_server.url, "gc-a"):
        await eventually(lambda: gone(nats_store, skewed), timeout=15)
        assert datetime.now(UTC) >= ahead


async def test_orphans_go_only_when_their_owner_is_proven_gone(nats_server: NatsServer, nats_store: NatsStore) -> None:
    now = datetime.now(UTC)
    live = await nats_store.create(job("live", "Running", ttl=0, finished=now))
    aborted = await nats_store.create(job("aborted", "Aborted", ttl=0, finished=now))
    no_ttl = await nats_store.create(job("kept", "Completed", ttl=None, finished=now))
    keep = [live, aborted, no_ttl, *[await nats_store.create(d) for d in dependents(live)]]
    # A same-name job replaced an older one: the older one's leftovers are orphans.
    stale_ref = Job(api_version=BATCH_V1ALPHA1, metadata=ObjectMeta(name="live", namespace=NS, uid="old-uid"))
    stale = await nats_store.create(ConfigMap(api_version=CORE_V1, metadata=owned_by(stale_ref, "live-old-cm")))
    ghost_pod = Pod(api_version=CORE_V1, metadata=ObjectMeta(name="ghost", namespace=NS, uid="ghost-uid"))
    pod_group = await nats_store.create(PodGroup(api_version=SCHEDULING_V1BETA1, metadata=owned_by(ghost_pod, "pg-g")))
    rs_ref = OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="rs", uid="rs-uid", controller=True)
    rs_pod = await nats_store.create(
        Pod(api_version=CORE_V1, metadata=ObjectMeta(name="rs-pod", namespace=NS, owner_references=[rs_ref]))
    )
    async with running(nats_server.url, "gc-a"):
        await eventually(lambda: gone(nats_store, stale, pod_group))
        await asyncio.sleep(1.0)
        assert all([await exists(nats_store, o) for o in (*keep, rs_pod)])
    async with running(nats_server.url, "gc-b", gc_aborted=True):
        await eventually(lambda: gone(nats_store, aborted))


async def test_two_instances_collect_each_job_from_one(nats_server: NatsServer, nats_store: NatsStore) -> None:
    log = WriteLog()
    async with running(nats_server.url, "gc-a", log) as a, running(nats_server.url, "gc-b", log) as b:
        await memberships_settled(a, b)
        finished = datetime.now(UTC) - timedelta(seconds=1)
        everything: list[KubeObject] = []
        for i in range(10):
            j, children = await create_with_dependents(nats_store, job(f"j{i}", "Completed", ttl=1, finished=finished))
            everything += [j, *children]
        await eventually(lambda: gone(nats_store, *everything))
        log.closed = True
    by_job: dict[str, set[str]] = defaultdict(set)
    for (_, name), who in log.writers.items():
        by_job[name.split("-")[0]] |= who
    assert set(by_job) == {f"j{i}" for i in range(10)}
    assert all(len(who) == 1 for who in by_job.values()), by_job
    assert {w for who in by_job.values() for w in who} == {"gc-a", "gc-b"}
    assert log.conflicts == 0

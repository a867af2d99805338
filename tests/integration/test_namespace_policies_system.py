"""ResourceQuotas and PodDisruptionBudgets in the running system (real nats-server, the scheduler and
node-sim in process): written through admission's write API, followed by the scheduler's cache, acted on
by its resourcequota and pdb plugins.

- A quota below what a gang asks keeps its PodGroup Pending with Volcano's message; deleting the quota
  lets it be enqueued and its pods run.
- A budget over running pods keeps the live scheduler's preempt from evicting any of them for a higher
  priority pod; deleting the budget lets preempt take one, and the pod it was for runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.support.inprocess import run_app
from tests.support.waiting import eventually
from vc_admission.context import CacheContext
from vc_admission.review import Admitter
from vc_admission.write_api import WriteApi
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_node_sim.app import NodeSimApp
from vc_proto import api
from vc_proto.core import CORE_V1, SCHEDULING_K8S_V1, Container, Pod, PodSpec, PriorityClass, ResourceRequirements
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION
from vc_sched_core.framework.conf import DEFAULT_CONF_YAML
from vc_scheduler.app import SchedulerApp

pytestmark = [pytest.mark.nats, pytest.mark.integration]

# Volcano's default conf with resourcequota in its second tier.
QUOTA_CONF = DEFAULT_CONF_YAML + "  - name: resourcequota\n"
# tests/scenarios/pdb-protects-victims.yaml's: no drf, whose preemptable would decide when pdb leaves no victim.
PDB_CONF = """\
actions: "enqueue, allocate, preempt"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: pdb
- plugins:
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
SIM: dict[str, Any] = {"node_cpu": "4", "node_gpu": "0", "start_delay": 0.05}
_reply = msgspec.json.Decoder(api.WriteReply)


async def admit(store: NatsStore, request: dict[str, Any]) -> None:
    """One request to admission's write API (the class `vc-admission` serves), as the admin."""
    reply = _reply.decode(await WriteApi(store, Admitter(CacheContext(store))).handle(msgspec.json.encode(request)))
    assert reply.error is None, reply.error


def podgroup(name: str, namespace: str, members: int, **spec: Any) -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, namespace=namespace),
        spec=PodGroupSpec(min_member=members, queue="default", **spec),
    )


def pod(group: str, namespace: str, index: int, cpu: str = "1", priority: int | None = None) -> Pod:
    container = Container(name="c", image="busybox", resources=ResourceRequirements(requests={"cpu": cpu}))
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(
            name=f"{group}-{index}",
            namespace=namespace,
            labels={"app": group},
            annotations={GROUP_NAME_ANNOTATION: group},
        ),
        spec=PodSpec(scheduler_name="volcano", containers=[container], priority=priority),
    )


async def messages(store: NatsStore, namespace: str, name: str) -> list[str]:
    group = await store.get(PodGroup, namespace, name)
    return [c.message or "" for c in (group.status.conditions or [])] if group.status else []


async def phase(store: NatsStore, namespace: str, name: str) -> str | None:
    group = await store.get(PodGroup, namespace, name)
    return group.status.phase if group.status else None


async def running(store: NatsStore, namespace: str, names: list[str]) -> bool:
    pods = [await store.get(Pod, namespace, n) for n in names]
    return all(p.spec and p.spec.node_name and p.status and p.status.phase == "Running" for p in pods)


async def untouched(store: NatsStore, namespace: str, prefix: str) -> set[str]:
    """The pods named `prefix...` that are stored and not being deleted."""
    pods, _ = await store.list(Pod, namespace)
    named = (p for p in pods if (p.metadata.name or "").startswith(prefix))
    return {p.metadata.name or "" for p in named if p.metadata.deletion_timestamp is None}


async def test_a_quota_below_the_gang_keeps_it_pending_until_the_quota_goes(
    nats_server: NatsServer, nats_store: NatsStore, tmp_path: Path
) -> None:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(QUOTA_CONF)
    url = nats_server.url
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "team"},
        "spec": {"hard": {"pods": "2", "requests.cpu": "2"}},
    }
    await admit(nats_store, {"operation": "create", "object": quota})
    # As the job controller writes a vcjob's PodGroup: minResources in quota names, pods only once Inqueue.
    needs = {"count/pods": "3", "pods": "3", "cpu": "3", "requests.cpu": "3"}
    async with (
        run_app(NodeSimApp, "node-sim", url, "node-sim", nodes=2, **SIM),
        run_app(SchedulerApp, "scheduler", url, "scheduler", schedule_period=0.2, scheduler_conf=str(conf)),
    ):
        await nats_store.create(podgroup("train", "team", 3, min_resources=needs))
        volcano = (
            "resource quota insufficient, requested: {pods: 3, requests.cpu: 3}, used: {pods: 0, requests.cpu: 0}, "
            "limited: {pods: 2, requests.cpu: 2} (ResourceQuota team/compute)"
        )

        async def told() -> bool:
            return any(volcano in m for m in await messages(nats_store, "team", "train"))

        await eventually(told, what="the quota's message on the PodGroup")
        assert await phase(nats_store, "team", "train") == "Pending"

        await admit(
            nats_store, {"operation": "delete", "kind": "ResourceQuota", "namespace": "team", "name": "compute"}
        )

        async def enqueued() -> bool:
            return await phase(nats_store, "team", "train") == "Inqueue"

        await eventually(enqueued, what="the PodGroup enqueued once the quota is gone")
        for i in range(3):
            await nats_store.create(pod("train", "team", i))

        async def gang_running() -> bool:
            return await running(nats_store, "team", [f"train-{i}" for i in range(3)])

        await eventually(gang_running, what="the gang's pods running")


async def test_a_disruption_budget_keeps_preempt_off_its_pods_until_it_goes(
    nats_server: NatsServer, nats_store: NatsStore, tmp_path: Path
) -> None:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(PDB_CONF)
    url = nats_server.url
    for name, value in (("high", 1000), ("low", 10)):
        await nats_store.create(
            PriorityClass(api_version=SCHEDULING_K8S_V1, metadata=ObjectMeta(name=name), value=value)
        )
    low = [f"low-{i}" for i in range(4)]
    async with (
        run_app(NodeSimApp, "node-sim", url, "node-sim", nodes=1, **SIM),
        run_app(SchedulerApp, "scheduler", url, "scheduler", schedule_period=0.2, scheduler_conf=str(conf)),
    ):
        # Four low-priority pods fill the node's 4 CPUs; a budget allows none of them to go.
        await nats_store.create(podgroup("low", "default", 1, priority_class_name="low"))
        for i in range(4):
            await nats_store.create(pod("low", "default", i, priority=10))
        await eventually(lambda: running(nats_store, "default", low), what="the low pods running")
        budget = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "low", "namespace": "default"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "low"}}},
        }
        await admit(nats_store, {"operation": "create", "object": budget})

        # A high-priority pod that only preempting one of them would place.
        await nats_store.create(podgroup("high", "default", 1, priority_class_name="high"))
        await nats_store.create(pod("high", "default", 0, priority=1000))

        async def judged(name: str) -> bool:
            return bool(await messages(nats_store, "default", name))

        await eventually(lambda: judged("high"), what="a cycle that tried to place the high pod")
        # One more cycle after it (a PodGroup nothing can place, nor preempt for): the first cycle's
        # evictions, had there been any, were handed to the evictor before this one began.
        await nats_store.create(podgroup("tick", "default", 1))
        await nats_store.create(pod("tick", "default", 0, cpu="8"))
        await eventually(lambda: judged("tick"), what="a later cycle")
        assert await untouched(nats_store, "default", "low-") == set(low), "a low pod was evicted through the budget"
        assert not (await nats_store.get(Pod, "default", "high-0")).spec.node_name  # type: ignore[union-attr]

        await admit(
            nats_store, {"operation": "delete", "kind": "PodDisruptionBudget", "namespace": "default", "name": "low"}
        )
        await eventually(lambda: running(nats_store, "default", ["high-0"]), what="the high pod running by preempting")
        assert len(await untouched(nats_store, "default", "low-")) == 3  # one victim, no more

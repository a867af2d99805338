"""Network-topology-aware gangs in the embedded system (real nats-server): node-sim builds racks and
spines (`--topology`), the scheduler (with the plugin in its conf) places a hard-mode gang inside one
rack, and a gang that would only fit across two spines waits, its PodGroup saying which tiers did not fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.inprocess import run_app
from tests.support.waiting import eventually
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_node_sim.app import NodeSimApp
from vc_node_sim.topology import RACK_LABEL
from vc_proto.batch import NetworkTopologySpec
from vc_proto.core import CORE_V1, Container, Node, Pod, PodSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, PodGroupSpec
from vc_proto.topology import HyperNode
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION
from vc_sched_core.framework.conf import DEFAULT_CONF_YAML
from vc_scheduler.app import SchedulerApp

pytestmark = [pytest.mark.nats]

# Volcano's default conf with the topology plugin added to its second tier.
CONF = DEFAULT_CONF_YAML + "  - name: network-topology-aware\n"


def podgroup(name: str, members: int, highest_tier: int) -> PodGroup:
    return PodGroup(
        api_version=SCHEDULING_V1BETA1,
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(
            min_member=members,
            queue="default",
            network_topology=NetworkTopologySpec(mode="hard", highest_tier_allowed=highest_tier),
        ),
    )


def worker(group: str, index: int) -> Pod:
    container = Container(name="c", image="busybox", resources=ResourceRequirements(requests={"cpu": "4"}))
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=f"{group}-{index}", namespace="default", annotations={GROUP_NAME_ANNOTATION: group}),
        spec=PodSpec(scheduler_name="volcano", containers=[container]),
    )


async def node_of(store: NatsStore, name: str) -> str | None:
    pod = await store.get(Pod, "default", name)
    return pod.spec.node_name if pod.spec else None


async def test_hard_gang_in_one_rack_and_too_wide_gang_waits(
    nats_server: NatsServer, nats_store: NatsStore, tmp_path: Path
) -> None:
    conf = tmp_path / "scheduler.yaml"
    conf.write_text(CONF)
    url = nats_server.url
    sim: dict[str, Any] = {
        "nodes": 8,
        "topology": "racks=2,spines=2",
        "node_cpu": "4",
        "node_gpu": "0",
        "start_delay": 0.05,
    }
    async with run_app(NodeSimApp, "node-sim", url, "node-sim", **sim):

        async def topology_stored() -> bool:
            return len((await nats_store.list(HyperNode))[0]) == 6  # 4 racks, 2 spines

        await eventually(topology_stored)
        async with run_app(SchedulerApp, "scheduler", url, "scheduler", schedule_period=0.2, scheduler_conf=str(conf)):
            await nats_store.create(podgroup("rackjob", 2, highest_tier=1))
            await nats_store.create(podgroup("widegang", 5, highest_tier=2))
            for i in range(2):
                await nats_store.create(worker("rackjob", i))
            for i in range(5):
                await nats_store.create(worker("widegang", i))

            async def rackjob_bound() -> bool:
                return all([await node_of(nats_store, f"rackjob-{i}") for i in range(2)])

            await eventually(rackjob_bound)
            nodes = [await node_of(nats_store, f"rackjob-{i}") for i in range(2)]
            racks = {((await nats_store.get(Node, None, n or "")).metadata.labels or {})[RACK_LABEL] for n in nodes}
            assert len(racks) == 1, f"the gang spans racks {racks}"

            async def widegang_told() -> bool:
                group = await nats_store.get(PodGroup, "default", "widegang")
                messages = [c.message or "" for c in (group.status.conditions or [])] if group.status else []
                return any("no hypernode of tier 1 or 2 can hold the gang's 5 tasks" in m for m in messages)

            await eventually(widegang_told)
            # Six nodes are free (20 of 24 CPUs would do across spines), but no spine holds five.
            assert [await node_of(nats_store, f"widegang-{i}") for i in range(5)] == [None] * 5

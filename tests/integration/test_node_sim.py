"""node-sim on a real nats-server: registration, pod lifecycle with exit codes, deletion, NotReady, SIGKILL."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from nats.aio.client import Client

from tests.support.services import ServiceProcess, eventually
from vc_bus.events import follow
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_core.errors import NotFound
from vc_core.times import rfc3339_from_epoch
from vc_node_sim.statuses import finished_status
from vc_proto import subjects
from vc_proto.core import CORE_V1, Container, Node, Pod, PodSpec
from vc_proto.meta import ObjectMeta

pytestmark = [pytest.mark.nats, pytest.mark.integration]


@pytest.fixture
def node_sim(nats_server: NatsServer, tmp_path: Path) -> Iterator[ServiceProcess]:
    service = ServiceProcess(
        "vc-node-sim", nats_server.url, ["--nodes", "3", "--start-delay", "0.1"], tmp_path / "node-sim.log"
    )
    service.start()
    yield service
    service.stop_quietly()


def sim_pod(name: str, node: str, *, duration: str | None = "1s", exit_code: int | None = None) -> Pod:
    annotations = {}
    if duration is not None:
        annotations["sim.tephra.dev/duration"] = duration
    if exit_code is not None:
        annotations["sim.tephra.dev/exit-code"] = str(exit_code)
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=name, namespace="default", annotations=annotations or None),
        spec=PodSpec(node_name=node, containers=[Container(name="main")]),
    )


async def phase(store: NatsStore, name: str) -> str | None:
    try:
        pod = await store.get(Pod, "default", name)
    except NotFound:
        return "<gone>"
    return pod.status.phase if pod.status else None


async def test_nodes_register_with_capacity_and_ready(node_sim: ServiceProcess, nats_store: NatsStore) -> None:
    await node_sim.wait_ready()
    nodes, _ = await nats_store.list(Node)
    assert sorted(n.metadata.name or "" for n in nodes) == ["node-0", "node-1", "node-2"]
    node = nodes[0]
    assert node.status and node.status.allocatable == {
        "cpu": "32",
        "memory": "256Gi",
        "pods": "110",
        "nvidia.com/gpu": "8",
    }
    assert node.metadata.labels and node.metadata.labels["kubernetes.io/hostname"] == node.metadata.name
    assert [c.status for c in node.status.conditions or [] if c.type == "Ready"] == ["True"]


async def test_pods_run_and_end_with_their_exit_codes(node_sim: ServiceProcess, nats_store: NatsStore) -> None:
    await node_sim.wait_ready()
    await nats_store.create(sim_pod("ok", "node-0"))
    await nats_store.create(sim_pod("bad", "node-1", exit_code=7))
    await nats_store.create(sim_pod("forever", "node-2", duration=None))
    await nats_store.create(sim_pod("elsewhere", "not-a-sim-node"))

    async def finished() -> bool:
        return await phase(nats_store, "ok") == "Succeeded" and await phase(nats_store, "bad") == "Failed"

    await eventually(finished, timeout=15)
    bad = await nats_store.get(Pod, "default", "bad")
    assert bad.status and bad.status.container_statuses
    terminated = bad.status.container_statuses[0].state.terminated if bad.status.container_statuses[0].state else None
    assert terminated is not None and terminated.exit_code == 7 and terminated.reason == "Error"
    assert await phase(nats_store, "forever") == "Running"
    assert await phase(nats_store, "elsewhere") == "Pending"  # no simulated node runs it


async def test_deleting_a_running_pod_terminates_and_removes_it(
    node_sim: ServiceProcess, nats_store: NatsStore
) -> None:
    await node_sim.wait_ready()
    await nats_store.create(sim_pod("victim", "node-0", duration=None))
    await eventually(lambda: _is(nats_store, "victim", "Running"), timeout=10)
    await nats_store.delete(Pod, "default", "victim")
    await eventually(lambda: _is(nats_store, "victim", "<gone>"), timeout=10)


async def test_not_ready_node_evicts_its_pods(node_sim: ServiceProcess, nats_store: NatsStore, nc: Client) -> None:
    await node_sim.wait_ready()
    await nats_store.create(sim_pod("on-sick-node", "node-1", duration=None))
    await nats_store.create(sim_pod("on-healthy-node", "node-2", duration=None))
    await eventually(lambda: _is(nats_store, "on-sick-node", "Running"), timeout=10)
    reply = await nc.request(
        subjects.NODE_SIM_CONTROL, json.dumps({"node": "node-1", "ready": False}).encode(), timeout=5
    )
    assert json.loads(reply.data) == {"ok": True}
    await eventually(lambda: _is(nats_store, "on-sick-node", "<gone>"), timeout=10)
    node = await nats_store.get(Node, None, "node-1")
    assert node.spec and {t.key for t in node.spec.taints or []} == {"node.kubernetes.io/not-ready"}
    assert await phase(nats_store, "on-healthy-node") == "Running"
    bad = await nc.request(subjects.NODE_SIM_CONTROL, json.dumps({"node": "nope", "ready": False}).encode(), timeout=5)
    assert "not found" in json.loads(bad.data)["error"]


async def test_sigkill_mid_run_loses_and_duplicates_nothing(
    node_sim: ServiceProcess, nats_store: NatsStore, nc: Client
) -> None:
    await node_sim.wait_ready()
    names = [f"p{i}" for i in range(40)]
    for i, name in enumerate(names):
        await nats_store.create(sim_pod(name, f"node-{i % 3}", duration=f"{1 + i % 3}s", exit_code=i % 2))
    await eventually(lambda: _count_phase(nats_store, names, "Running", at_least=10), timeout=10)
    node_sim.kill()
    node_sim.start()
    await node_sim.wait_ready()

    async def all_done() -> bool:
        return all([await phase(nats_store, n) in ("Succeeded", "Failed") for n in names])

    await eventually(all_done, timeout=30)
    for i, name in enumerate(names):
        assert await phase(nats_store, name) == ("Succeeded" if i % 2 == 0 else "Failed")
    # A pod's event is published after its status is written: the last ones may still be on their way.
    await eventually(lambda: _every_exit_once(nc, names), timeout=10)


async def test_a_transition_written_by_a_node_sim_killed_before_its_event_is_told_by_the_next(
    node_sim: ServiceProcess, nats_store: NatsStore, nc: Client
) -> None:
    """The kill's worst moment, made certain: node-sim wrote a pod's end and died before publishing it.
    The next node-sim publishes it at its first sync, and the events published before the kill are
    not published twice."""
    await node_sim.wait_ready()
    await nats_store.create(sim_pod("lost", "node-0", duration="1h"))
    await eventually(lambda: _is(nats_store, "lost", "Running"), timeout=10)
    await eventually(lambda: _has_events(nc, "lost", ["PodStarted"]), timeout=10)
    node_sim.kill()
    running = await nats_store.get(Pod, "default", "lost")
    ended = finished_status(running, now=rfc3339_from_epoch(time.time()), exit_code=7, message="killed")
    await nats_store.update(msgspec.structs.replace(running, status=ended))
    node_sim.start()
    await node_sim.wait_ready()
    await eventually(lambda: _has_events(nc, "lost", ["PodStarted", "PodExited"]), timeout=10)
    exited = [s.event async for s in follow(nc, subjects.event_filter("pod"), stop_when_caught_up=True)][-1]
    assert (exited.reason, exited.phase, exited.exit_code, exited.message) == ("PodExited", "Failed", 7, "killed")


async def _events_of(nc: Client, name: str) -> list[str]:
    return [
        stored.event.reason
        async for stored in follow(nc, subjects.event_filter("pod"), stop_when_caught_up=True)
        if stored.event.name == name
    ]


async def _has_events(nc: Client, name: str, reasons: list[str]) -> bool:
    return await _events_of(nc, name) == reasons


async def _every_exit_once(nc: Client, names: list[str]) -> bool:
    exits: Counter[str] = Counter()
    async for stored in follow(nc, subjects.event_filter("pod"), stop_when_caught_up=True):
        if stored.event.reason == "PodExited":
            exits[stored.event.name] += 1
    assert all(count == 1 for count in exits.values()), exits  # a duplicate never goes away: fail now
    return exits == Counter({name: 1 for name in names})


async def _is(store: NatsStore, name: str, expected: str | None) -> bool:
    return await phase(store, name) == expected


async def _count_phase(store: NatsStore, names: list[str], expected: str, *, at_least: int) -> bool:
    return sum([await phase(store, n) == expected for n in names]) >= at_least

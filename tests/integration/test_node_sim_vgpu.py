"""node-sim `--vgpus-per-node`: every node is stored with its shareable GPUs as Volcano's vGPU device
plugin registers them, which the scheduler's snapshot reads, and a heartbeat keeps them (real
nats-server)."""

from __future__ import annotations

import msgspec
import pytest

from tests.support.inprocess import run_app
from tests.support.waiting import eventually
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_node_sim.app import NodeSimApp
from vc_proto import codec
from vc_proto.core import Node
from vc_sched_core.snapshot.loader import decode_json

pytestmark = [pytest.mark.nats]


async def test_nodes_register_their_gpus(nats_server: NatsServer, nats_store: NatsStore) -> None:
    flags = {"nodes": 2, "vgpus_per_node": 3, "vgpu_memory": 24576, "vgpu_split": 4, "heartbeat_period": 0.2}
    async with run_app(NodeSimApp, "node-sim", nats_server.url, "node-sim", **flags) as app:

        async def registered() -> bool:
            return len((await nats_store.list(Node))[0]) == 2

        await eventually(registered)
        node = await nats_store.get(Node, None, "node-1")
        assert node.status is not None and node.status.allocatable is not None
        allocatable = node.status.allocatable
        assert (allocatable["volcano.sh/vgpu-number"], allocatable["volcano.sh/vgpu-memory"]) == ("12", "73728")
        assert allocatable["volcano.sh/vgpu-cores"] == "300" and allocatable["cpu"] == "32"
        view, _ = decode_json("Node", msgspec.json.encode(codec.to_dict(node)))
        inventory = view.vgpu  # type: ignore[attr-defined]
        assert inventory is not None and [(d.number, d.memory) for d in inventory.devices] == [(4, 24576)] * 3
        revision = node.metadata.resource_version

        async def heartbeat_kept_them() -> bool:
            again = await nats_store.get(Node, None, "node-1")
            annotations = again.metadata.annotations or {}
            return again.metadata.resource_version != revision and "volcano.sh/node-vgpu-register" in annotations

        await eventually(heartbeat_kept_them)
        assert app.vgpus is not None

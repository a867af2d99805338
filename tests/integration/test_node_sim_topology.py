"""node-sim `--topology`: its nodes carry their rack and spine labels and the HyperNodes are stored (real
nats-server)."""

from __future__ import annotations

import pytest

from tests.support.inprocess import run_app
from tests.support.waiting import eventually
from vc_bus.server import NatsServer
from vc_bus.store import NatsStore
from vc_node_sim.app import NodeSimApp
from vc_node_sim.topology import RACK_LABEL, SPINE_LABEL
from vc_proto.core import Node
from vc_proto.topology import HyperNode

pytestmark = [pytest.mark.nats]


async def test_topology_is_stored_with_the_nodes(nats_server: NatsServer, nats_store: NatsStore) -> None:
    async with run_app(NodeSimApp, "node-sim", nats_server.url, "node-sim", nodes=6, topology="racks=2,spines=2"):

        async def stored() -> bool:
            return len((await nats_store.list(HyperNode))[0]) == 5

        await eventually(stored)
        hypernodes = {h.metadata.name or "": h for h in (await nats_store.list(HyperNode))[0]}
        assert sorted(hypernodes) == ["rack-0", "rack-1", "rack-2", "spine-0", "spine-1"]
        assert {n: h.spec.tier for n, h in hypernodes.items() if h.spec} == {
            "rack-0": 1,
            "rack-1": 1,
            "rack-2": 1,
            "spine-0": 2,
            "spine-1": 2,
        }
        node = await nats_store.get(Node, None, "node-5")
        labels = node.metadata.labels or {}
        assert (labels[RACK_LABEL], labels[SPINE_LABEL]) == ("rack-2", "spine-1")

"""node-sim is handed only the pods bound to its own nodes: under load most pod changes are of pods not
yet bound, or bound elsewhere, and it would decode each only to drop it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tests.support.waiting import eventually
from vc_bus.store import WatchEvent, WatchOp
from vc_bus.testing import MemoryStore
from vc_node_sim.kubelet import Kubelet, NodeState
from vc_node_sim.logic import SimConfig
from vc_proto.core import CORE_V1, Container, Pod, PodSpec
from vc_proto.meta import ObjectMeta


class RecordingStore(MemoryStore):
    """Records the names of the objects each watch hands its reader."""

    def __init__(self) -> None:
        super().__init__()
        self.handed: list[str] = []

    async def watch(self, kind, **kw) -> AsyncIterator[WatchEvent]:  # type: ignore[no-untyped-def,override]
        async for event in super().watch(kind, **kw):
            if event.op is WatchOp.PUT:
                self.handed.append(event.name)
            yield event


def pod(name: str, node: str | None) -> Pod:
    spec = PodSpec(node_name=node, containers=[Container(name="c", image="busybox")])
    return Pod(api_version=CORE_V1, metadata=ObjectMeta(name=name, namespace="ns"), spec=spec)


async def _no_events(event: object) -> None:
    return None


async def test_only_pods_bound_to_its_nodes_reach_it() -> None:
    store = RecordingStore()
    kubelet = Kubelet(store, SimConfig(), _no_events)  # type: ignore[arg-type]
    kubelet.nodes["mine"] = NodeState("mine", "10.0.0.1", {"cpu": "8", "pods": "110"})
    await store.create(pod("unbound", None))
    await store.create(pod("elsewhere", "someone-elses-node"))
    await store.create(pod("here", "mine"))
    shutdown = asyncio.Event()
    follow = asyncio.create_task(kubelet.follow_pods(shutdown))
    try:
        await eventually(kubelet.synced.is_set, what="the pod watch synced")
        await store.create(pod("here-too", "mine"))
        await eventually(lambda: len(kubelet.pods) == 2, what="both pods of its node kept")
        assert store.handed == ["here", "here-too"]
    finally:
        shutdown.set()
        follow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follow

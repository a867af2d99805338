"""node-sim keeps of each pod only what plan() reads (cached.py), and writes a pod's status from the
stored pod: what the cache leaves out stays in the store. At the seeds' scale (1,000,000 pods) every
process must hold a pod in a few KB."""

from __future__ import annotations

from tests.support.memory import retained_bytes
from tests.support.waiting import eventually
from tests.unit.bench.bench_pods import running_gang_pods
from tests.unit.node_sim.running import running
from vc_bus.store import decode_stored
from vc_bus.testing import MemoryStore
from vc_core.store import WatchEvent, WatchOp
from vc_node_sim.kubelet import Kubelet, NodeState
from vc_node_sim.logic import SimConfig
from vc_proto import subjects
from vc_proto.core import CORE_V1, Container, EnvVar, Pod, PodSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta

PODS = 10_000
NODES = 1_000
# What node-sim holds per Running pod of the gang benchmark (the kept pod, its requests, its timer).
# Measured: 1.6 KB; the whole decoded pod would take 6.8 KB.
MAX_BYTES_PER_POD = 2_000


async def _no_events(event: object) -> None:
    return None


def test_a_running_pod_costs_node_sim_at_most_its_bound() -> None:
    stored = running_gang_pods(PODS, nodes=NODES)
    kubelet = Kubelet(MemoryStore(), SimConfig(), _no_events)  # type: ignore[arg-type]
    for i in range(NODES):
        name = f"node-{i:05d}"
        kubelet.nodes[name] = NodeState(name, "10.0.0.1", {"cpu": "64", "memory": "256Gi", "pods": "110"})

    def fill() -> int:
        for revision, (key, value) in enumerate(stored, start=1):
            # Decoded here, as the store's watch decodes each entry: what node-sim keeps of it counts.
            pod = decode_stored("Pod", key, value, revision)
            namespace, name = subjects.split_key(key)
            kubelet.apply(WatchEvent(WatchOp.PUT, revision, namespace, name, pod))
        return len(kubelet.pods)

    kept, retained = retained_bytes(fill)

    assert kept == PODS
    assert retained / PODS <= MAX_BYTES_PER_POD, f"{retained / PODS:.0f} bytes per pod"


async def test_a_started_pod_keeps_in_the_store_what_node_sim_does_not_keep() -> None:
    store = MemoryStore()
    kubelet = Kubelet(store, SimConfig(start_delay_s=0), _no_events)  # type: ignore[arg-type]
    kubelet.nodes["mine"] = NodeState("mine", "10.0.0.1", {"cpu": "8", "pods": "110"})
    container = Container(
        name="main",
        image="busybox",
        env=[EnvVar(name="RANK", value="0")],
        resources=ResourceRequirements(requests={"cpu": "1"}),
    )
    spec = PodSpec(node_name="mine", containers=[container], restart_policy="Never")
    await store.create(Pod(api_version=CORE_V1, metadata=ObjectMeta(name="p", namespace="ns"), spec=spec))
    async with running(kubelet):

        async def pod_running() -> bool:
            pod = await store.get(Pod, "ns", "p")
            return bool(pod.status and pod.status.phase == "Running")

        await eventually(pod_running, what="the pod Running")
        assert (await store.get(Pod, "ns", "p")).spec == spec
        kept = kubelet.pods[("ns", "p")]
        assert kept.spec is not None and kept.spec.node_name == "mine" and kept.spec.containers is None
        assert kubelet._running_on("mine", besides=("ns", "other")) == [{"cpu": 1, "pods": 1}]

"""Wiring of the node simulator: register nodes, follow pods, run timers, heartbeat, control requests."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import msgspec
import structlog
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from vc_bus.decoding import UNDECODABLE, describe, report_undecodable
from vc_bus.events import EventBatcher
from vc_core.errors import ConfigError, Conflict, InvalidObject, NotFound, VcError
from vc_core.retry import RetryPolicy
from vc_node_sim.control import parse_control
from vc_node_sim.history import retried
from vc_node_sim.kubelet import Kubelet
from vc_node_sim.logic import SimConfig
from vc_node_sim.topology import Topology, build_topology, parse_topology
from vc_node_sim.vgpu import VGPUShape
from vc_proto import subjects
from vc_proto.topology import HyperNode
from vc_runtime.aio import sleep_or_stop, wait_or_stop
from vc_runtime.service import FnWorker, ServiceContext, Worker
from vc_runtime.settings import RuntimeSettings, options_of
from vc_validation.simulation import parse_sim_duration

log = structlog.get_logger(__name__)
MAX_NODES = 100_000
# A HyperNode written by another node-sim meanwhile (a lost compare-and-set) is read again and rewritten.
HYPERNODE_WRITE_RETRY = RetryPolicy((Conflict,), base_s=0.005, cap_s=0.05, attempts=10)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, help="number of simulated nodes")
    parser.add_argument("--node-prefix", help="node names are <prefix><index>")
    parser.add_argument("--node-cpu")
    parser.add_argument("--node-memory")
    parser.add_argument("--node-gpu")
    parser.add_argument("--node-pods")
    parser.add_argument("--start-delay", type=float, help="seconds from bind to Running")
    parser.add_argument("--default-duration", help="run time of pods without the duration annotation")
    parser.add_argument("--termination", type=float, help="seconds a deleted pod takes to stop")
    parser.add_argument("--eviction-delay", type=float, help="seconds before pods leave a NotReady node")
    parser.add_argument("--heartbeat-period", type=float, help="seconds between node heartbeats")
    parser.add_argument("--not-ready", help="comma-separated nodes to register NotReady")
    parser.add_argument(
        "--topology",
        help="racks=N,spines=M: HyperNodes putting the nodes in racks of N nodes (tier 1), spines of M racks (tier 2)",
    )
    parser.add_argument(
        "--vgpus-per-node",
        type=int,
        help="shareable GPUs per node, registered as Volcano's vGPU device plugin does (deviceshare)",
    )
    parser.add_argument("--vgpu-memory", type=int, help="MiB of device memory per shareable GPU")
    parser.add_argument("--vgpu-split", type=int, help="pods that may share one GPU (deviceSplitCount)")


class NodeSimOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The flags of add_arguments, typed, with their defaults."""

    nodes: int = 4
    node_prefix: str = "node-"
    node_cpu: str = "32"
    node_memory: str = "256Gi"
    node_gpu: str = "8"
    node_pods: str = "110"
    start_delay: float = 0.2
    default_duration: str | None = None
    termination: float = 0.0
    eviction_delay: float = 0.0
    heartbeat_period: float = 60.0
    not_ready: str = ""
    topology: str = ""
    vgpus_per_node: int = 0
    vgpu_memory: int = 16384
    vgpu_split: int = 10


def default_duration(text: str) -> float:
    """--default-duration: a duration of 0s or more (as the pod annotation), else ConfigError (exit 2)."""
    try:
        return parse_sim_duration(text, path="--default-duration")
    except InvalidObject as exc:
        raise ConfigError(f"--default-duration: {exc.message}") from exc


def host_ip(index: int) -> str:
    return f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"


class NodeSimApp:
    name = "node-sim"

    def __init__(self, settings: RuntimeSettings) -> None:
        options = options_of(settings, NodeSimOptions)
        count = options.nodes
        if not 0 <= count <= MAX_NODES:
            raise ConfigError(f"--nodes must be between 0 and {MAX_NODES}")
        default = options.default_duration
        self.count = count
        self.prefix = options.node_prefix
        self.capacity = {"cpu": options.node_cpu, "memory": options.node_memory, "pods": options.node_pods}
        gpu = options.node_gpu
        if gpu not in ("", "0"):
            self.capacity["nvidia.com/gpu"] = gpu
        self.vgpus = VGPUShape.of(options.vgpus_per_node, options.vgpu_memory, options.vgpu_split)
        if self.vgpus is not None:
            self.capacity.update(self.vgpus.allocatable())
        self.not_ready = {n for n in options.not_ready.split(",") if n}
        shape = parse_topology(options.topology)
        names = [f"{self.prefix}{i}" for i in range(count)]
        self.topology: Topology | None = build_topology(names, shape) if shape else None
        self.heartbeat_s = options.heartbeat_period
        self.cfg = SimConfig(
            start_delay_s=options.start_delay,
            default_duration_s=default_duration(default) if default else None,
            termination_s=options.termination,
            eviction_delay_s=options.eviction_delay,
        )

    async def open(self, ctx: ServiceContext) -> Sequence[Worker]:
        # Pod transitions come in bursts (a timer fires for many pods): what one loop turn publishes is one write.
        batcher = EventBatcher(retried(ctx.events.publish_batch))
        kubelet = Kubelet(store=ctx.store, cfg=self.cfg, publish=batcher.publish)
        ctx.probes.require("nodes-registered", "pods-synced")
        await self._register_all(kubelet)
        if self.topology is not None:
            await _store_hypernodes(ctx, self.topology)
        ctx.probes.set("nodes-registered")
        sub = await ctx.nc.subscribe(subjects.NODE_SIM_CONTROL, queue="node-sim", cb=self._control_handler(kubelet))
        ctx.resources.push_async_callback(sub.unsubscribe)

        async def mark_synced(shutdown: asyncio.Event) -> None:
            if await wait_or_stop(kubelet.synced, shutdown):
                ctx.probes.set("pods-synced")

        return [
            FnWorker("pods", kubelet.follow_pods),
            FnWorker("timers", kubelet.run_timers),
            FnWorker("heartbeat", lambda s: self._heartbeat(kubelet, s)),
            FnWorker("synced", mark_synced),
        ]

    async def _register_all(self, kubelet: Kubelet) -> None:
        gate = asyncio.Semaphore(256)

        async def one(i: int) -> None:
            async with gate:
                name = f"{self.prefix}{i}"
                ready = False if name in self.not_ready else None
                labels = self.topology.node_labels.get(name) if self.topology else None
                annotations = self.vgpus.annotations(name) if self.vgpus else None
                await kubelet.register(
                    name,
                    capacity=self.capacity,
                    host_ip=host_ip(i),
                    ready=ready,
                    labels=labels,
                    annotations=annotations,
                )

        async with asyncio.TaskGroup() as tg:
            for i in range(self.count):
                tg.create_task(one(i), name=f"register:{i}")
        log.info("nodes.registered", count=self.count)

    async def _heartbeat(self, kubelet: Kubelet, shutdown: asyncio.Event) -> None:
        """Touch every node once per period, spread evenly so writes stay smooth at 10,000 nodes."""
        while not shutdown.is_set():
            names = list(kubelet.nodes)
            pause = self.heartbeat_s / max(1, len(names))
            for name in names:
                if shutdown.is_set():
                    return
                try:
                    await kubelet.heartbeat(name)
                except (VcError, NatsError) as exc:  # NATS unavailable for a moment: the next beat retries
                    log.warning("node.heartbeat_failed", node=name, error=str(exc) or repr(exc))
                await sleep_or_stop(shutdown, pause)

    def _control_handler(self, kubelet: Kubelet) -> Callable[[Msg], Awaitable[None]]:
        async def handle(msg: Msg) -> None:
            reply = await _control(kubelet, msg.data)
            if msg.reply:
                await msg.respond(msgspec.json.encode(reply))

        return handle


async def _store_hypernodes(ctx: ServiceContext, topology: Topology) -> None:
    """Create each rack and spine, or overwrite the stored one's spec (a restart with another shape)."""
    for hypernode in topology.hypernodes:
        await HYPERNODE_WRITE_RETRY.call(partial(_store_hypernode, ctx, hypernode), sleep=asyncio.sleep)
    log.info("hypernodes.stored", count=len(topology.hypernodes))


async def _store_hypernode(ctx: ServiceContext, hypernode: HyperNode) -> None:
    try:
        existing = await ctx.store.get(HyperNode, None, hypernode.metadata.name or "")
    except NotFound:
        existing = None
    if existing is None:
        await ctx.store.create(hypernode)
    elif existing.spec != hypernode.spec:
        await ctx.store.update(msgspec.structs.replace(existing, spec=hypernode.spec))


async def _control(kubelet: Kubelet, data: bytes) -> dict[str, object]:
    """One control request, answered whatever it holds (a handler boundary: nobody on the bus can stop it)."""
    try:
        node, ready = parse_control(data)
    except UNDECODABLE as exc:
        report_undecodable(source=subjects.NODE_SIM_CONTROL, kind="ControlRequest", error=exc, size=len(data))
        return {"error": f'bad request: {describe(exc)}; expected {{"node": NAME, "ready": true|false}}'}
    try:
        await kubelet.set_ready(node, ready)
    except VcError as exc:  # NotFound (no such simulated node), or the store refused
        return {"error": str(exc)}
    return {"ok": True}

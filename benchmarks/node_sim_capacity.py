"""node-sim capacity: register N simulated nodes, then run M pods through Pending -> Running -> Succeeded.

    .venv/bin/python benchmarks/node_sim_capacity.py [--nodes 10000] [--pods 100000] [--sync default]

Pods are created already bound (spec.nodeName), so this measures node-sim and the store alone.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.progress import Progress
from benchmarks.report import BenchReport, running_curve
from benchmarks.services import Proc, wait_ready
from vc_bus.connection import connect
from vc_bus.server import NatsServer, free_port
from vc_bus.store import NatsStore
from vc_core.store import WatchOp
from vc_proto.core import CORE_V1, Container, Node, Pod, PodSpec
from vc_proto.meta import ObjectMeta


async def run(nodes: int, pods: int, sync: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp), sync=sync) as server:  # type: ignore[arg-type]
        port = free_port()
        argv = [str(Path(sys.executable).parent / "vc-node-sim"), "--nats", server.url, "--health-port", str(port)]
        node_sim = Proc(
            "node-sim", [*argv, "--nodes", str(nodes), "--start-delay", "0", "--heartbeat-period", "600"], port
        )
        start = time.perf_counter()
        node_sim.start(Path(tmp))  # only forks and execs (quick); the wait runs in a thread
        try:
            await wait_ready([node_sim], Path(tmp))
            register_s = time.perf_counter() - start
            async with connect(server.url, name="bench") as nc:
                store = NatsStore(nc)
                await store.ensure()
                assert len((await store.list(Node))[0]) == nodes
                run_s, create_s, curve = await _run_pods(store, nodes, pods)
        finally:
            node_sim.stop()
    print(
        f"node-sim[sync={sync}]: {nodes:,} nodes registered in {register_s:.1f}s; "
        f"{pods:,} pods created in {create_s:.1f}s "
        f"and all Succeeded after {run_s:.1f}s -> {2 * pods / run_s:,.0f} pod transitions/s",
        flush=True,
    )
    title = f"node-sim: {nodes:,} nodes, {pods:,} pods"
    report = BenchReport("node_sim_capacity", title, params={"sync": sync}, y_label="pods Succeeded")
    figures = {"nodes": nodes, "pods": pods, "register_s": register_s, "create_s": create_s, "run_s": run_s}
    report.add(f"node-sim, fsync {sync}", figures | {"pod_transitions_per_s": 2 * pods / run_s}, curve)
    print("  results: " + ", ".join(str(p) for p in report.write()), flush=True)


async def _run_pods(store: NatsStore, nodes: int, pods: int) -> tuple[float, float, list[tuple[float, int]]]:
    """Seconds until every pod Succeeded, seconds to create them, and pods Succeeded over time."""
    done = asyncio.Event()
    succeeded: dict[str, float] = {}
    progress = Progress("  pods Succeeded", pods)

    async def watch() -> None:
        async for event in store.watch(Pod):
            if event.op is WatchOp.PUT and event.obj and event.obj.status and event.obj.status.phase == "Succeeded":
                succeeded.setdefault(event.name, time.perf_counter())
                progress.update(len(succeeded))
                if len(succeeded) == pods:
                    done.set()
                    progress.close()
                    return

    start = time.perf_counter()
    async with asyncio.TaskGroup() as tg:
        watcher = tg.create_task(watch())
        gate = asyncio.Semaphore(256)

        async def create(i: int) -> None:
            async with gate:
                await store.create(
                    Pod(
                        api_version=CORE_V1,
                        metadata=ObjectMeta(
                            name=f"p{i}", namespace="bench", annotations={"sim.tephra.dev/duration": "1s"}
                        ),
                        spec=PodSpec(node_name=f"node-{i % nodes}", containers=[Container(name="main")]),
                    )
                )

        await asyncio.gather(*(create(i) for i in range(pods)))
        create_s = time.perf_counter() - start
        await done.wait()
        watcher.cancel()
    return time.perf_counter() - start, create_s, running_curve(succeeded.values(), start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--sync", choices=["always", "default"], default="default")
    args = parser.parse_args()
    asyncio.run(run(args.nodes, args.pods, args.sync))


if __name__ == "__main__":
    main()

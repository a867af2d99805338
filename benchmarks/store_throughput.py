"""Store throughput on a real nats-server: CAS writes/s, reads by name/s and watch events/s, for both
fsync modes.

.venv/bin/python benchmarks/store_throughput.py [--writes 20000] [--in-flight 256]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from benchmarks.report import BenchReport
from vc_bus.connection import connect
from vc_bus.server import NatsServer, SyncMode
from vc_bus.store import NatsStore
from vc_core.store import WatchOp
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta


def make_pod(i: int) -> Pod:
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(name=f"bench-{i}", namespace="bench", labels={"volcano.sh/job-name": f"job-{i // 10}"}),
        spec=PodSpec(
            scheduler_name="volcano",
            containers=[
                Container(
                    name="main", image="busybox", resources=ResourceRequirements(requests={"cpu": "1", "memory": "1Gi"})
                )
            ],
        ),
    )


async def bounded(coros: list, in_flight: int) -> list:  # type: ignore[type-arg]
    gate = asyncio.Semaphore(in_flight)

    async def one(coro):  # type: ignore[no-untyped-def]
        async with gate:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros))


async def measure(url: str, writes: int, in_flight: int) -> dict[str, float]:
    async with connect(url, name="bench") as nc:
        store = NatsStore(nc)
        await store.ensure()
        start = time.perf_counter()
        created = await bounded([store.create(make_pod(i)) for i in range(writes)], in_flight)
        create_s = time.perf_counter() - start
        start = time.perf_counter()
        await bounded([store.update(p) for p in created], in_flight)
        update_s = time.perf_counter() - start
        # A pod read by name: one wildcard last-by-subject get, its shard unknown (vc_proto.pod_shards).
        start = time.perf_counter()
        await bounded([store.get(Pod, "bench", f"bench-{i}") for i in range(writes)], in_flight)
        get_s = time.perf_counter() - start
        start = time.perf_counter()
        seen = 0
        async for event in store.watch(Pod):
            if event.op is WatchOp.SYNCED:
                break
            seen += 1
        watch_s = time.perf_counter() - start
    return {
        "create_per_s": writes / create_s,
        "cas_update_per_s": writes / update_s,
        "get_by_name_per_s": writes / get_s,
        "watch_events_per_s": seen / watch_s,
    }


async def run(writes: int, in_flight: int) -> None:
    params = {"writes": writes, "in_flight": in_flight}
    report = BenchReport("store_throughput", f"Store throughput: {writes:,} objects", params=params)
    for mode in ("always", "default"):
        sync: SyncMode = mode  # type: ignore[assignment]
        with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp), sync=sync) as server:
            figures = await measure(server.url, writes, in_flight)
        report.add(f"NATS KV, fsync {mode}", figures)
        print(
            f"store[sync={mode}]: create-if-absent {figures['create_per_s']:,.0f}/s, "
            f"CAS update {figures['cas_update_per_s']:,.0f}/s, "
            f"get by name {figures['get_by_name_per_s']:,.0f}/s, "
            f"watch replay {figures['watch_events_per_s']:,.0f} events/s "
            f"({writes:,} objects, {in_flight} in flight)",
            flush=True,
        )
    print("  results: " + ", ".join(str(p) for p in report.write()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--in-flight", type=int, default=256)
    args = parser.parse_args()
    asyncio.run(run(args.writes, args.in_flight))


if __name__ == "__main__":
    main()

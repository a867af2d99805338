"""What a change a reader never acts on costs, against what a JetStream write costs: whether a key and
subject layout that let nats-server deliver each service only the changes it acts on would be cheaper.

    .venv/bin/python -m benchmarks.delivery_cost [--writes 10000] [--readers 4] [--sync always]

Two phases on one nats-server, the same writes of a vcjob pod's JSON (256 in flight) into a pod bucket:
1. no reader: nats-server's CPU per write (with `sync_interval: always` each is an fsync);
2. `--readers` processes each following the bucket with the project's own watch (vc_bus.kvwatch) and
   a selector that refuses every pod whose node is not theirs (none is), as node-sim and the podgroup
   controller refuse most changes: nats-server's CPU per delivery (phase 2 minus phase 1, per message
   delivered) and a reader's CPU per refused change.

The ratio printed last, a refused delivery's whole cost (server and reader) against a write's (server and
writer), is what a subject layout would have to beat: a pod's node is set once it is bound, so a key that
carried it would move at the bind, and a move is a second write (the old key's delete marker, which every
reader of the old subject must see) on top of the bind itself.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from subprocess import DEVNULL, PIPE

from nats.aio.client import Client

from benchmarks.procstat import cpu_seconds
from benchmarks.store_throughput import bounded
from vc_bus.connection import connect
from vc_bus.kvwatch import watch_bucket
from vc_bus.server import NatsServer, SyncMode
from vc_bus.store import NatsStore
from vc_core.store import WatchOp
from vc_proto import subjects
from vc_proto.batch import BATCH_V1ALPHA1
from vc_proto.core import CORE_V1, Container, Pod, PodSpec, ResourceRequirements
from vc_proto.meta import ObjectMeta, OwnerReference
from vc_proto.selectors import pods_bound_to

BUCKET = subjects.bucket("Pod")


def vcjob_pod(i: int) -> Pod:
    """A pod as the job controller writes one (labels, annotations, controller reference), unbound."""
    job = f"job-{i // 10}"
    return Pod(
        api_version=CORE_V1,
        metadata=ObjectMeta(
            name=f"{job}-w-{i % 10}",
            namespace="bench",
            labels={"volcano.sh/job-name": job, "volcano.sh/task-spec": "w", "volcano.sh/queue-name": "default"},
            annotations={
                "scheduling.k8s.io/group-name": job,
                "volcano.sh/job-name": job,
                "volcano.sh/task-spec": "w",
                "volcano.sh/template-uid": f"{job}-w",
                "sim.tephra.dev/duration": "1h",
            },
            owner_references=[
                OwnerReference(api_version=BATCH_V1ALPHA1, kind="Job", name=job, uid=f"uid-{job}", controller=True)
            ],
        ),
        spec=PodSpec(
            scheduler_name="volcano",
            containers=[
                Container(
                    name="main",
                    image="busybox",
                    resources=ResourceRequirements(requests={"cpu": "250m", "memory": "256Mi"}),
                )
            ],
        ),
    )


async def read_refusing(url: str, after: int, expected: int) -> float:
    """A reader's whole life: follow the pod bucket from after revision `after` (the phase's own writes
    only: a watch from revision 0 would first replay every pod already stored, and stop before the
    phase's writes were delivered), refusing every change, until `expected` arrived. Returns its CPU
    seconds from the first change to the last (its start-up is not the changes' cost)."""
    async with connect(url, name="bench-reader") as nc:
        select = pods_bound_to(frozenset({"no-such-node"}))
        seen, started = 0, 0.0
        async for entry in watch_bucket(nc.jetstream(), BUCKET, from_revision=after, select=select):
            if entry.op is WatchOp.PUT:
                raise SystemExit("a change the selector should have refused came through")
            if entry.op is WatchOp.DELETE:
                if seen == 0:
                    started = time.process_time()
                seen += 1
                if seen >= expected:
                    break
        return time.process_time() - started


async def write_all(store: NatsStore, first: int, writes: int, in_flight: int) -> None:
    await bounded([store.create(vcjob_pod(i)) for i in range(first, first + writes)], in_flight)


async def phase(
    server: NatsServer, nc: Client, store: NatsStore, first: int, writes: int, readers: int, in_flight: int
) -> dict[str, float]:
    """Write `writes` pods with `readers` reader processes following: nats-server's CPU seconds over the
    writes and their delivery, the readers' CPU seconds over the changes, and the writes' wall time."""
    after = (await nc.jetstream().stream_info(f"KV_{BUCKET}")).state.last_seq
    argv = ["-m", "benchmarks.delivery_cost", "--reader", server.url, "--after", str(after), "--expect", str(writes)]
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, *argv, stdin=DEVNULL, stdout=PIPE) for _ in range(readers)
    ]
    try:
        # Let the readers start and open their consumers, so that they follow the writes live; they count
        # from `after` whenever they start, and the server's CPU is read once every one has all of them.
        await asyncio.sleep(3.0)
        server_before, writer_before = cpu_seconds(server.pid), time.process_time()
        start = time.perf_counter()
        await write_all(store, first, writes, in_flight)
        write_s = time.perf_counter() - start
        writer = time.process_time() - writer_before
        readers_cpu = 0.0
        for p in procs:
            out, _ = await asyncio.wait_for(p.communicate(), 600)
            if p.returncode != 0:
                raise SystemExit(f"a reader exited with {p.returncode}")
            readers_cpu += float(out.decode().strip() or 0)
        server_cpu = cpu_seconds(server.pid) - server_before
        return {"server": server_cpu, "writer": writer, "readers": readers_cpu, "write_s": write_s}
    finally:
        for p in procs:
            if p.returncode is None:
                p.kill()
                await p.wait()


async def measure(writes: int, readers: int, in_flight: int, sync: SyncMode) -> None:
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "nats", sync=sync) as server:
        async with connect(server.url, name="bench-writer") as nc:
            store = NatsStore(nc)
            await store.ensure()
            await write_all(store, 10**9, 500, in_flight)  # warm the server and the bucket up
            alone = await phase(server, nc, store, 0, writes, 0, in_flight)
            followed = await phase(server, nc, store, writes, writes, readers, in_flight)
    per_write_us = 1e6 * alone["server"] / writes
    writer_us = 1e6 * alone["writer"] / writes
    deliveries = writes * readers
    per_delivery_server_us = 1e6 * (followed["server"] - alone["server"]) / max(1, deliveries)
    per_delivery_reader_us = 1e6 * followed["readers"] / max(1, deliveries)
    # The server's share is the difference of two phases whose fsyncs alone vary by more than it: a
    # negative one is printed as measured and counted as nothing.
    refused_us = max(0.0, per_delivery_server_us) + per_delivery_reader_us
    write_us = per_write_us + writer_us
    print(
        f"delivery cost [{writes:,} pod writes, fsync {sync}, {in_flight} in flight; {readers} readers refusing "
        f"every change]:\n"
        f"  per write, no reader: nats-server {per_write_us:.0f} us, writer {writer_us:.0f} us "
        f"({writes / alone['write_s']:,.0f} writes/s)\n"
        f"  per delivery: nats-server {per_delivery_server_us:.0f} us (phase 2 - phase 1), "
        f"reader {per_delivery_reader_us:.0f} us "
        f"({writes / followed['write_s']:,.0f} writes/s while followed)\n"
        f"  a refused delivery ({refused_us:.0f} us) costs {refused_us / write_us:.2f}x a write ({write_us:.0f} us)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.delivery_cost")
    parser.add_argument("--writes", type=int, default=10_000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--sync", choices=("always", "default"), default="always")
    parser.add_argument("--reader", help=argparse.SUPPRESS)  # internal: run as one reader of this server
    parser.add_argument("--after", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reader:
        print(asyncio.run(read_refusing(args.reader, args.after, args.expect)), flush=True)
        return
    asyncio.run(measure(args.writes, args.readers, args.in_flight, args.sync))


if __name__ == "__main__":
    main()

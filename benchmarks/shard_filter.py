"""What a reader sent only its share of a bucket costs, against one sent the whole bucket: the premise of
pods keyed by their PodGroup's shard (docs/scale-out.md, "Pods keyed by their PodGroup's shard").

    .venv/bin/python -m benchmarks.shard_filter [--pods 100000] [--shards 64] [--owned 16]

`--pods` values (900 bytes each) are written under the keys the store gives pods
(`vc_proto.subjects.pod_key`: `<namespace>.<shard>.<name>`; with `--shard-last`,
`<namespace>.<name>.<shard>`), the shard random in `--shards`. Then, alternately, twice each: one
consumer over the whole bucket (`>`), and one over `--owned` of the shards (`filter_subjects`, one
`pod_shard_filter(shard)` per shard owned, `*.<shard>.>`, or `*.*.<shard>`; as one of
`shards / owned` instances would hold), each read by the project's watch (`vc_bus.kvwatch.watch_bucket`,
the scheduler cache's reader) until it is synced. Printed per read: the messages delivered, the reader's
CPU and nats-server's CPU, both per pod of the bucket, and last the ratios of the share's read to the
whole one's.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path

from nats.js import JetStreamContext

from benchmarks.procstat import cpu_seconds
from vc_bus.connection import connect
from vc_bus.kvwatch import watch_bucket
from vc_bus.server import NatsServer
from vc_core.store import WatchOp
from vc_proto import subjects

BUCKET = "Pod"
STREAM = f"KV_{BUCKET}"
VALUE = b"x" * 900  # about a pod's stored JSON


def pod_key(namespace: str, shard: int, name: str, *, shard_last: bool) -> str:
    return f"{namespace}.{name}.{shard}" if shard_last else subjects.pod_key(namespace, shard, name)


def shard_filter(shard: int, *, shard_last: bool) -> str:
    return f"*.*.{shard}" if shard_last else subjects.pod_shard_filter(shard)


async def write(js: JetStreamContext, pods: int, shards: int, *, shard_last: bool) -> None:
    rng = random.Random(7)
    pending = []
    for i in range(pods):
        key = pod_key(f"ns-{i % 50}", rng.randrange(shards), f"pod-{i}", shard_last=shard_last)
        pending.append(js.publish(f"$KV.Pod.{key}", VALUE))
        if len(pending) >= 2_000:
            await asyncio.gather(*pending)
            pending = []
    await asyncio.gather(*pending)


async def drain(js: JetStreamContext, filters: list[str]) -> int:
    """Read every key the filters select, from the first, until the watch is synced; how many there were."""
    got = 0
    feed = watch_bucket(js, BUCKET, filters)
    try:
        async for entry in feed:
            if entry.op is WatchOp.SYNCED:
                break
            got += 1
    finally:
        await feed.aclose()  # type: ignore[attr-defined]
    return got


async def measure(pods: int, shards: int, owned: int, *, shard_last: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "nats") as server:
        async with connect(server.url, name="bench-shards") as nc:
            js = nc.jetstream()
            await js.add_stream(name=STREAM, subjects=["$KV.Pod.>"], max_msgs_per_subject=1)
            await write(js, pods, shards, shard_last=shard_last)
            owned_shards = range(0, shards, max(1, shards // owned))
            share = [shard_filter(shard, shard_last=shard_last) for shard in owned_shards][:owned]
            results: dict[str, list[tuple[float, float]]] = {"whole": [], "share": []}
            for label, filters in (("whole", [">"]), ("share", share)) * 2:
                server_before, reader_before = cpu_seconds(server.pid), time.process_time()
                got = await drain(js, filters)
                reader_us = 1e6 * (time.process_time() - reader_before) / pods
                server_us = 1e6 * (cpu_seconds(server.pid) - server_before) / pods
                results[label].append((reader_us, server_us))
                print(
                    f"  {label:5s} ({len(filters)} filter{'s' if len(filters) > 1 else ''}): {got:,} messages; "
                    f"per pod of the bucket: reader {reader_us:.1f} us, nats-server {server_us:.1f} us",
                    flush=True,
                )
    whole_reader = sum(r for r, _ in results["whole"])
    whole_server = sum(s for _, s in results["whole"])
    share_reader = sum(r for r, _ in results["share"])
    share_server = sum(s for _, s in results["share"])
    # nats-server's CPU is read from /proc in 10 ms ticks: a small run may see none of them.
    server = f"{share_server / whole_server:.2f}x" if whole_server > 0 else "not measured (under a tick)"
    layout = "<namespace>.<name>.<shard>" if shard_last else "<namespace>.<shard>.<name>"
    print(
        f"shard filter [{pods:,} pods in {shards} shards under {layout}, a share of {owned}]: the share's read "
        "against the "
        f"whole's: reader {share_reader / whole_reader:.2f}x, nats-server {server}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.shard_filter")
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=64)
    parser.add_argument("--owned", type=int, default=16)
    parser.add_argument("--shard-last", action="store_true", help="keys with the shard after the name")
    args = parser.parse_args()
    if not 1 <= args.pods <= 10_000_000:
        raise SystemExit("--pods must be between 1 and 10,000,000")
    if not 1 <= args.shards <= 1_024:
        raise SystemExit("--shards must be between 1 and 1,024")
    if not 1 <= args.owned <= args.shards:
        raise SystemExit("--owned must be between 1 and --shards")
    asyncio.run(measure(args.pods, args.shards, args.owned, shard_last=args.shard_last))


if __name__ == "__main__":
    main()

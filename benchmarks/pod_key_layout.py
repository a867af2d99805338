"""Where a pod's shard goes in its key: what nats-server spends on a pod's create (refused while its name
is held in any shard) and on a read by name (its shard unknown), the store's layout (the shard before the
name) against the shard after it.

    .venv/bin/python -m benchmarks.pod_key_layout [--pods 20000]

Both layouts in the same run, alternately, twice each, on a bucket of `--pods` keys in 64 shards (ten
pods a group, fsync default): `--pods` creates (`Bucket.create_alone`: the write expects the newest
sequence under the name's keys in every shard), `--pods` reads by name (`Bucket.last_of`: the newest
entry under them), and, as the yardstick, `--pods` plain creates of one exact key each. Printed: the
server's CPU per operation, and last the ratios of the store's layout to the other. What the store's
layout buys, a share's consumer read at about the cost of a whole one's, is
`benchmarks/shard_filter.py`'s (`--shard-last` for the other layout).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchmarks.procstat import cpu_seconds
from vc_bus.buckets import Bucket, open_bucket
from vc_bus.connection import connect
from vc_bus.server import NatsServer
from vc_proto import subjects
from vc_proto.pod_shards import shard_of_group

VALUE = b"x" * 900  # about a pod's stored JSON
IN_FLIGHT = 256
Layout = tuple[Callable[[int], str], Callable[[int], str]]  # (the pod's key, the keys its name may be under)


def _shard(i: int) -> int:
    return shard_of_group("bench", f"group-{i // 10}")


LAYOUTS: dict[str, Layout] = {
    # The store's (vc_proto.subjects.pod_key): `<namespace>.<shard>.<name>`.
    "before": (
        lambda i: subjects.pod_key("bench", _shard(i), f"pod-{i}"),
        lambda i: subjects.pod_name_filter("bench", f"pod-{i}"),
    ),
    "after": (lambda i: f"bench.pod-{i}.{_shard(i)}", lambda i: f"bench.pod-{i}.*"),
}


async def _bounded(calls: list[Callable[[], Awaitable[object]]]) -> None:
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one(call: Callable[[], Awaitable[object]]) -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one(c) for c in calls))


async def _per_op(pid: int, pods: int, calls: list[Callable[[], Awaitable[object]]]) -> float:
    """Server CPU microseconds per call."""
    before = cpu_seconds(pid)
    await _bounded(calls)
    return 1e6 * (cpu_seconds(pid) - before) / pods


async def one_layout(name: str, pods: int) -> dict[str, float]:
    key, names = LAYOUTS[name]
    # fsync default: an fsync per write would be most of a create's cost, the same in both layouts.
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "nats", sync="default") as server:
        async with connect(server.url, name="bench-layout") as nc:
            bucket: Bucket = await open_bucket(nc.jetstream(), subjects.bucket("Pod"))
            figures = {
                "create": await _per_op(
                    server.pid, pods, [lambda i=i: bucket.create_alone(key(i), VALUE, names(i)) for i in range(pods)]
                ),
                "read by name": await _per_op(
                    server.pid, pods, [lambda i=i: bucket.last_of(names(i)) for i in range(pods)]
                ),
                "plain create": await _per_op(
                    server.pid, pods, [lambda i=i: bucket.create(key(i) + "x", VALUE) for i in range(pods)]
                ),
            }
    print(f"  shard {name:6s} the name: " + ", ".join(f"{k} {v:.1f} us" for k, v in figures.items()), flush=True)
    return figures


async def measure(pods: int) -> None:
    sums: dict[str, dict[str, float]] = {"after": {}, "before": {}}
    for name in ("before", "after") * 2:
        for op, value in (await one_layout(name, pods)).items():
            sums[name][op] = sums[name].get(op, 0.0) + value
    after, before = sums["after"], sums["before"]
    ratios = ", ".join(f"{op} {before[op] / after[op]:.2f}x" for op in after if after[op] > 0)
    print(
        f"pod key layout [{pods:,} pods, nats-server CPU per operation], the store's (shard before the name) "
        f"against the shard after it: {ratios}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.pod_key_layout")
    parser.add_argument("--pods", type=int, default=20_000, help="pods per layout and run (1,000-1,000,000)")
    args = parser.parse_args()
    if not 1_000 <= args.pods <= 1_000_000:
        parser.error("--pods: between 1,000 and 1,000,000")
    asyncio.run(measure(args.pods))


if __name__ == "__main__":
    main()

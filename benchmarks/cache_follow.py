"""What following its share costs one scheduler instance: its cache applying the changes, in-process.

    .venv/bin/python -m benchmarks.cache_follow [--nodes 10000] [--pods 100000] [--instances 1,4] [--repeats 3]

The changes are those of benchmarks/scheduler_scaleout.py's cluster (benchmarks/pending_gangs.py): the
nodes, PodGroups and pending pods as the start-up sync delivers them, then one bind per pod (spec.nodeName
set, spread over the nodes). For each k the cache is the service's (`share_only`) of instance "s0" among
k members: it takes its share before it reads any pod, as the loop does at its first cycle, and is sent
the pods of its shards only, as its filtered pods watch is (shard_feed.py). Printed per k, the best of
--repeats (the CPU time of this process): the sync and the binds, in seconds and in microseconds per
change. Comparing k = 4 with k = 1 in the same run says what being sent a share's pods only saves.
"""

from __future__ import annotations

import argparse
import gc
import time

import msgspec

from benchmarks.pending_gangs import Shape, objects
from vc_bus.kvwatch import RawEntry
from vc_bus.objects import storage_key
from vc_core.store import WatchOp
from vc_proto import subjects
from vc_proto.core import Pod
from vc_runtime.service import GC_THRESHOLDS
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.share import Partition


def changes(shape: Shape) -> tuple[list[tuple[str, RawEntry]], list[RawEntry]]:
    """The sync's entries (kind, entry) and the binds' (Pod entries), with increasing revisions."""
    synced: list[tuple[str, RawEntry]] = []
    pods: list[tuple[str, Pod]] = []
    revision = 0
    for obj in objects(shape):
        revision += 1
        key = storage_key(obj)
        synced.append((type(obj).__name__, RawEntry(WatchOp.PUT, revision, key, msgspec.json.encode(obj))))
        if isinstance(obj, Pod):
            pods.append((key, obj))
    binds = []
    for i, (key, pod) in enumerate(pods):
        revision += 1
        assert pod.spec is not None
        bound = msgspec.structs.replace(
            pod, spec=msgspec.structs.replace(pod.spec, node_name=f"node-{i % shape.nodes:05d}")
        )
        binds.append(RawEntry(WatchOp.PUT, revision, key, msgspec.json.encode(bound)))
    return synced, binds


def follow_once(
    k: int, synced: list[tuple[str, RawEntry]], binds: list[RawEntry]
) -> tuple[tuple[float, float], SchedulerCache]:
    """The CPU seconds of the sync and of the binds of the share's shards; and the cache after them."""
    cache = SchedulerCache(share_only=True)
    partition = Partition("s0", tuple(f"s{i}" for i in range(k)))
    cache.regroup(partition.owns, partition.owns_node, partition.shards)
    mine = [(kind, e) for kind, e in synced if kind != "Pod" or subjects.shard_of_pod_key(e.key) in partition.shards]
    mine += [(kind, RawEntry(WatchOp.SYNCED, synced[-1][1].revision)) for kind in ("Pod", "PodGroup")]
    their_binds = [e for e in binds if subjects.shard_of_pod_key(e.key) in partition.shards]
    started = time.process_time()
    for kind, entry in mine:
        cache.apply(kind, entry)
    sync_done = time.process_time()
    for entry in their_binds:
        cache.apply("Pod", entry)
    return (sync_done - started, time.process_time() - sync_done), cache


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cache_follow")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--instances", default="1,4", help="the k to measure, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLDS)  # as the scheduler service runs (vc_runtime.service)
    shape = Shape(nodes=args.nodes, pods=args.pods)
    synced, binds = changes(shape)
    for k in (int(n) for n in args.instances.split(",")):
        runs = [follow_once(k, synced, binds)[0] for _ in range(args.repeats)]
        best = [min(times) for times in zip(*runs, strict=True)]
        sync_s, binds_s = best
        print(
            f"cache follow [{shape.nodes:,} nodes, {shape.pods:,} pods, instance 1 of {k}]: "
            f"sync {sync_s:.2f} s ({sync_s / len(synced) * 1e6:.1f} us per change of the cluster), "
            f"binds {binds_s:.2f} s ({binds_s / len(binds) * 1e6:.1f} us per bind of the cluster)",
            flush=True,
        )


if __name__ == "__main__":
    main()

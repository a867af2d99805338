"""One scheduling session at scale: 10,000 nodes, 10,000 pending pods in 1,000 gangs of 10.

Runs enqueue, allocate, backfill with the default plugins and prints the session time and the pods
decided per second. `python -m benchmarks.scheduler_session [--nodes N] [--gangs G] [--size S] [--profile]`

With `--cycles N` it then runs N more cycles the way the scheduler service does: each on the cluster
the previous one left (its binds applied, and the binds of the cycle before it Running, as node-sim
starts them), with the state carried between cycles (carried.py), and prints each cycle's time, its
opening and the node rows it rebuilt: what a cycle costs when little changed. The carried cycles see
the pods in the order the service's cache keeps them, by creation: the Running ones first.
`--binds-per-cycle B` bounds each session's binds as the service's option does.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.machine import Speed, reference_seconds
from benchmarks.report import BenchReport
from vc_sched_core.cycle import apply_result, load_scheduler_conf, run_cycle
from vc_sched_core.framework.carried import CarriedState
from vc_sched_core.snapshot import ClusterSnapshot, load_objects


def cluster_objects(nodes: int, gangs: int, size: int, running: int = 0, vgpus: int = 0) -> list[dict[str, Any]]:
    """`nodes` nodes, `gangs` pending gangs of `size`, and `running` gangs already Running (spread
    over the nodes round-robin: the steady state of a busy cluster, whose pods a session must count).
    `vgpus`: each node registers that many shareable GPUs (as vc-node-sim --vgpus-per-node does); the
    pods ask for none."""
    objects: list[dict[str, Any]] = [
        {
            "kind": "Node",
            "metadata": {
                "name": f"node-{i:05}",
                "labels": {"kubernetes.io/hostname": f"node-{i:05}", "zone": f"z{i % 4}"},
                "annotations": _vgpu_register(i, vgpus),
            },
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", **_vgpu_allocatable(vgpus)}},
        }
        for i in range(nodes)
    ]
    objects.append({"kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}})
    for g in range(gangs):
        objects.append(
            {
                "kind": "PodGroup",
                "metadata": {"name": f"job-{g:04}", "namespace": "bench"},
                "spec": {"minMember": size, "minResources": {"cpu": str(size), "memory": f"{size}Gi"}},
                "status": {"phase": "Pending"},
            }
        )
        objects.extend(_pod(g, t) for t in range(size))
    for r in range(running):
        g = gangs + r
        objects.append(
            {
                "kind": "PodGroup",
                "metadata": {"name": f"job-{g:04}", "namespace": "bench"},
                "spec": {"minMember": size, "minResources": {"cpu": str(size), "memory": f"{size}Gi"}},
                "status": {"phase": "Running", "running": size},
            }
        )
        for t in range(size):
            pod = _pod(g, t)
            pod["spec"]["nodeName"] = f"node-{(r * size + t) % nodes:05}"
            pod["status"]["phase"] = "Running"
            objects.append(pod)
    return objects


def _vgpu_register(node: int, vgpus: int) -> dict[str, str]:
    if not vgpus:
        return {}
    devices = "".join(f"GPU-{node:05}-{i},10,16384,NVIDIA-A10,true,hami-core:" for i in range(vgpus))
    return {"volcano.sh/node-vgpu-register": devices}


def _vgpu_allocatable(vgpus: int) -> dict[str, str]:
    if not vgpus:
        return {}
    return {
        "volcano.sh/vgpu-number": str(10 * vgpus),
        "volcano.sh/vgpu-memory": str(16384 * vgpus),
        "volcano.sh/vgpu-cores": str(100 * vgpus),
    }


def _pod(gang: int, index: int) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": f"job-{gang:04}-worker-{index}",
            "namespace": "bench",
            "annotations": {"scheduling.k8s.io/group-name": f"job-{gang:04}", "volcano.sh/task-spec": "worker"},
        },
        "spec": {
            "schedulerName": "volcano",
            "containers": [{"name": "w", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
        "status": {"phase": "Pending"},
    }


def run(snapshot: ClusterSnapshot) -> tuple[float, int]:
    seconds, bound, _ = run_detailed(snapshot)
    return seconds, bound


def run_detailed(snapshot: ClusterSnapshot) -> tuple[float, int, dict[str, float]]:
    """Session seconds, pods bound, and the per-action / per-plugin durations the cycle recorded."""
    seconds, _, bound, durations = run_timed(snapshot)
    return seconds, bound, durations


def run_timed(snapshot: ClusterSnapshot, conf_text: str | None = None) -> tuple[float, float, int, dict[str, float]]:
    """`run_detailed` with the session's CPU seconds as well: on a shared machine the wall time is
    mostly what other processes leave over, the CPU time the session's own cost."""
    conf = load_scheduler_conf(conf_text)
    start, cpu = time.perf_counter(), time.process_time()
    result = run_cycle(snapshot, conf)
    return time.perf_counter() - start, time.process_time() - cpu, len(result.binds), result.stats.durations_s


@dataclass(frozen=True, slots=True)
class CarriedCycle:
    seconds: float
    cpu_s: float
    binds: int
    open_s: float  # the session's opening (bringing the carried state to the snapshot, plugins' open)
    rows_rebuilt: int  # node rows the opening accounted again from empty


def carried_cycles(
    snapshot: ClusterSnapshot, cycles: int, conf_text: str | None = None, *, bind_budget: int | None = None
) -> list[CarriedCycle]:
    """`cycles` cycles after a first one, each on the cluster the previous left (its binds Bound, the
    ones before Running), with the state carried (the first builds it)."""
    conf, memo = load_scheduler_conf(conf_text), CarriedState()
    snapshot = _cache_order(snapshot)
    out, starting = [], frozenset[str]()
    for cycle in range(cycles + 1):
        start, cpu = time.perf_counter(), time.process_time()
        result = run_cycle(
            snapshot, conf, carried=memo, session_uid=f"cycle-{cycle}", bind_budget=bind_budget, report_unchanged=False
        )
        opened = result.stats.durations_s.get("session:open", 0.0)
        spent = time.perf_counter() - start
        out.append(CarriedCycle(spent, time.process_time() - cpu, len(result.binds), opened, memo.rebuilt[1]))
        after = _as_written(snapshot, apply_result(snapshot, result))
        pods = tuple(msgspec.structs.replace(p, phase="Running") if p.key in starting else p for p in after.pods)
        snapshot, starting = replace(after, pods=pods), frozenset(result.binds)
    return out[1:]


def _cache_order(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The pods as the service's cache orders them, by creation: those already on a node first, each
    with its place as its order (the cache's order: its key's first arrival)."""
    placed = [p for p in snapshot.pods if p.node_name]
    waiting = [p for p in snapshot.pods if not p.node_name]
    pods = tuple(msgspec.structs.replace(p, order=i) for i, p in enumerate(placed + waiting))
    return replace(snapshot, pods=pods)


def _as_written(before: ClusterSnapshot, after: ClusterSnapshot) -> ClusterSnapshot:
    """`after` with the PodGroups whose status did not change kept as they were: the service's status
    writer writes only changes, so its cache keeps the same objects (transition ids aside)."""

    def same(old: Any, new: Any) -> bool:
        strip = [(c.type, c.status, c.reason, c.message) for c in old.conditions]
        return old.phase == new.phase and strip == [(c.type, c.status, c.reason, c.message) for c in new.conditions]

    pairs = zip(before.podgroups, after.podgroups, strict=True)
    return replace(after, podgroups=tuple(old if same(old, new) else new for old, new in pairs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--gangs", type=int, default=1_000)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--running", type=int, default=0, help="gangs already Running on the nodes")
    parser.add_argument("--profile", action="store_true", help="print the top cProfile entries")
    parser.add_argument("--cycles", type=int, default=0, help="then this many cycles on carried state")
    parser.add_argument("--conf", help="scheduler conf file (Volcano's YAML); default: the built-in one")
    parser.add_argument("--vgpus", type=int, default=0, help="shareable GPUs registered per node (pods ask none)")
    parser.add_argument("--binds-per-cycle", type=int, help="bound each carried cycle's binds (the service's option)")
    args = parser.parse_args()
    conf_text = Path(args.conf).read_text() if args.conf else None
    start = time.perf_counter()
    snapshot = load_objects(cluster_objects(args.nodes, args.gangs, args.size, args.running, args.vgpus))
    load_s = time.perf_counter() - start
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
    before_ms = 1000 * reference_seconds()
    seconds, cpu_s, bound, durations = run_timed(snapshot, conf_text)
    speed = Speed(before_ms, 1000 * reference_seconds())
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    pods = args.gangs * args.size
    print(
        f"scheduler_session: {args.nodes} nodes, {pods} pending pods in {args.gangs} gangs of {args.size}, "
        f"{args.running * args.size} pods Running"
    )
    print(f"  snapshot load     {load_s:8.3f} s")
    print(f"  session           {seconds:8.3f} s  ({bound} pods bound; {cpu_s:.3f} CPU seconds)")
    print(f"  pods decided/s    {pods / seconds:8.0f}")
    print(f"  {speed.describe()}: the session's CPU is {speed.in_references(cpu_s):.1f} references")
    for name, spent in sorted(durations.items(), key=lambda item: -item[1])[:6]:
        print(f"    {name:<28} {spent:8.3f} s")
    figures: dict[str, float] = {
        "load_s": load_s,
        "session_s": seconds,
        "bound": bound,
        "pods_per_s": pods / seconds,
        "session_cpu_s": cpu_s,
        "reference_ms": speed.mean_ms,
        "session_references": speed.in_references(cpu_s),
    }
    if args.cycles:
        carried = carried_cycles(snapshot, args.cycles, conf_text, bind_budget=args.binds_per_cycle)
        for i, c in enumerate(carried, start=1):
            print(
                f"  carried cycle {i:<3} {c.seconds:8.3f} s  ({c.binds} pods bound; {c.cpu_s:.3f} CPU seconds; "
                f"opening {c.open_s:.3f} s, {c.rows_rebuilt} node rows rebuilt)"
            )
            figures[f"carried_cycle_{i}_s"] = c.seconds
            figures[f"carried_cycle_{i}_open_s"] = c.open_s
    report = BenchReport("scheduler_session", f"One session: {pods:,} pods on {args.nodes:,} nodes", params=vars(args))
    report.add("tephra scheduling core", figures | {f"{name}_s": spent for name, spent in durations.items()})
    print("  results: " + ", ".join(str(p) for p in report.write()))


if __name__ == "__main__":
    main()

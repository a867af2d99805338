"""The cost of inter-pod anti-affinity and topology spread in one session at scale.

The scheduler_session cluster (10,000 nodes in 4 zones, 1,000 pending gangs of 10) twice: as it is,
and with 10% of the gangs asking for required anti-affinity among their own pods (one per node) and
10% for a DoNotSchedule zone spread (maxSkew 1). Every pod carries its gang's label in both runs, so
only the constraints differ. Prints both session times and their ratio (the target is <= 1.5),
in CPU seconds of this process (the machine is shared: wall time measures the neighbours too) and in
wall seconds.

`python -m benchmarks.scheduler_affinity [--nodes N] [--gangs G] [--size S] [--repeat R]`
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from benchmarks.scheduler_session import cluster_objects
from vc_runtime.service import GC_THRESHOLDS
from vc_sched_core.cycle import load_scheduler_conf, run_cycle
from vc_sched_core.snapshot import ClusterSnapshot, load_objects


def constrained(objects: list[dict[str, Any]], *, constraints: bool) -> list[dict[str, Any]]:
    """The pods labelled by gang; with `constraints`, every tenth gang anti-affine among itself and the
    next tenth spread over zones."""
    for obj in objects:
        if obj["kind"] != "Pod":
            continue
        gang = obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        obj["metadata"]["labels"] = {"gang": gang}
        number = int(gang.rsplit("-", 1)[1])
        if not constraints:
            continue
        selector = {"matchLabels": {"gang": gang}}
        if number % 10 == 0:
            term = {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
            obj["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        elif number % 10 == 1:
            spread = {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
            obj["spec"]["topologySpreadConstraints"] = [spread]
    return objects


def timed(snapshot: ClusterSnapshot) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, pods bound) of one session."""
    conf = load_scheduler_conf()
    cpu, wall = time.process_time(), time.perf_counter()
    result = run_cycle(snapshot, conf)
    return time.process_time() - cpu, time.perf_counter() - wall, len(result.binds)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scheduler_affinity")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--gangs", type=int, default=1_000)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each; the fastest counts")
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLDS)  # as the scheduler service runs its sessions (vc_runtime.service)
    results = {}
    for name, flag in (("plain", False), ("constrained", True)):
        snapshot = load_objects(constrained(cluster_objects(args.nodes, args.gangs, args.size), constraints=flag))
        runs = [timed(snapshot) for _ in range(args.repeat)]
        results[name] = (min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2])
        cpu, wall, bound = results[name]
        print(f"scheduler_affinity: {name}: {cpu:.2f} s CPU, {wall:.2f} s wall, {bound} pods bound", flush=True)
    cpu_ratio = results["constrained"][0] / results["plain"][0]
    wall_ratio = results["constrained"][1] / results["plain"][1]
    print(
        f"scheduler_affinity: {args.nodes} nodes, {args.gangs} gangs of {args.size}, 10% required anti-affinity and "
        f"10% topology spread: {cpu_ratio:.2f}x the session without them in CPU time ({wall_ratio:.2f}x wall; "
        "target <= 1.5x)"
    )


if __name__ == "__main__":
    main()

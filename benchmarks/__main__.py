"""`make bench`: every benchmark, each printing its figures (tests check behaviour, never time).

.venv/bin/python -m benchmarks [--quick] [--soak-minutes N]

The soak (tests/soak, `make soak`) runs last, about an hour unless told otherwise: its verdict (no
growth of any process after warm-up) counts as a failure like any benchmark's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(script: str, *args: str) -> int:
    """One benchmark as `python -m benchmarks.<name>` from the repository root (they share modules)."""
    print(f"== {script} {' '.join(args)}", flush=True)
    module = f"benchmarks.{script.removesuffix('.py')}"
    return subprocess.call([sys.executable, "-m", module, *args], cwd=HERE.parent)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument(
        "--soak-minutes",
        type=int,
        default=None,
        help="the soak's length, last (default 60; 2 with --quick; 0 skips it)",
    )
    args = parser.parse_args()
    quick = args.quick
    soak_minutes = args.soak_minutes if args.soak_minutes is not None else (2 if quick else 60)
    failures = 0
    failures += run("store_throughput.py", "--writes", "5000" if quick else "20000") != 0
    failures += run("delivery_cost.py", *(["--writes", "2000"] if quick else [])) != 0
    # A reader sent a quarter of the shards against one sent the whole bucket (share-keyed pods' premise).
    failures += run("shard_filter.py", *(["--pods", "5000"] if quick else [])) != 0
    # What nats-server spends on a pod's create and read by name, the shard after its name or before.
    failures += run("pod_key_layout.py", *(["--pods", "2000"] if quick else [])) != 0
    failures += run("node_sim_capacity.py", *(["--nodes", "1000", "--pods", "5000"] if quick else [])) != 0
    failures += run("scheduler_session.py", *(["--nodes", "1000", "--gangs", "100"] if quick else [])) != 0
    failures += run("scheduler_affinity.py", *(["--nodes", "1000", "--gangs", "100"] if quick else [])) != 0
    # What following every change costs one scheduler instance, alone and as one of four (in-process).
    failures += run("cache_follow.py", *(["--nodes", "1000", "--pods", "5000", "--repeats", "1"] if quick else [])) != 0
    # k = 1, 2 and 4 schedulers over pending gangs written to the store (10,000 nodes, 100,000 pods).
    failures += run("scheduler_scaleout.py", *(["--quick"] if quick else [])) != 0
    if quick:
        failures += run("e2e_gang_load.py", "--nodes", "100", "--pods", "500") != 0
    else:
        # The target load, for 1 and 2 schedulers: fsync default (a process crash loses nothing; an
        # OS crash may lose the last seconds), then the mid size with fsync on every write as well.
        full = ("--nodes", "10000", "--pods", "100000", "--sync", "default")
        failures += run("e2e_gang_load.py", *full) != 0
        for sync in ("default", "always"):
            failures += run("e2e_gang_load.py", "--nodes", "1000", "--pods", "10000", "--sync", sync) != 0
    if soak_minutes > 0:
        # The soak: steady load; every process's RSS, open files and asyncio tasks must level.
        print(f"== soak --minutes {soak_minutes}", flush=True)
        failures += (
            subprocess.call([sys.executable, "-m", "tests.soak", "--minutes", str(soak_minutes)], cwd=HERE.parent) != 0
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Scheduler scale-out: how fast k scheduler instances bind a cluster's pending gangs, and what it costs.

    .venv/bin/python -m benchmarks.scheduler_scaleout [--nodes 10000] [--pods 100000] [--instances 1,2,4,1]
    .venv/bin/python -m benchmarks.scheduler_scaleout --quick          # 1,000 nodes, 5,000 pods

For each k: a fresh nats-server (JetStream fsync at its default) and store; the default queues, the
nodes (Ready, idle) and the pods in gangs of 10 (each gang a Pending PodGroup, minMember 10) written
straight to the store (benchmarks/pending_gangs.py); then k `vc-scheduler` processes started, with
nothing else running (no controllers, no node-sim: a bind is the scheduler's write of spec.nodeName),
and timed from their start until every pod is bound, as this process sees the pods bucket.

Printed for each k: pods/s; the schedulers' CPU per pod (each process's CPU from its start, /proc);
each instance's CPU per cycle (its CPU over its cycle count, the `_count` of the e2e scheduling latency
histogram on its /metrics: one observation per cycle); commits on other instances' nodes and conflicts
per pod (from the schedulers' /metrics); then each k's mean session opening per cycle (the part of a
cycle that follows the share's size, where k4_cycle counts whole cycles, whose binds are bounded alike
for every k) and its share of k = 1's; and, last, the ratios of k = 2 and k = 4 to k = 1 in the same
run (benchmarks/scaleout_figures.py). k = 1 runs first and last by default and its two runs count
together: this machine's speed drifts by up to 1.6x within minutes, and a reference measured on both
sides of the others drifts with it.

    scaleout k2_rate=<ratio> k2_cpu=<ratio> k4_rate=<ratio> k4_cpu=<ratio> k4_cycle=<ratio>

A k that does not bind every pod within --timeout says how many it bound, its ratios are left out, and
the benchmark exits non-zero.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.machine import Speed, reference_seconds
from benchmarks.pending_gangs import NAMESPACE, Shape, count, write_all
from benchmarks.procstat import CpuMeter, Spies
from benchmarks.progress import Progress
from benchmarks.scaleout_figures import RunFigures, fixed_part_line, openings_line, per_pod, summary_line, together
from benchmarks.services import Proc, metric_by_label, metric_declared, metric_sum, scrape
from vc_bus.connection import connect
from vc_bus.server import NatsServer, SyncMode, free_port
from vc_bus.store import NatsStore
from vc_cli.up import ensure_default_queues
from vc_core.store import WatchOp
from vc_proto.core import Pod

BIN = Path(sys.executable).parent
SYNC: SyncMode = "default"
QUICK = Shape(nodes=1_000, pods=5_000)
# One observation per cycle (metrics.record_timings), so its count is the instance's cycles.
CYCLES = "volcano_e2e_scheduling_latency_milliseconds_count"
OPENING = "volcano_open_session_duration_milliseconds_sum"  # each session's opening, wall time
FOREIGN_BINDS = "tephra_scheduler_foreign_node_binds_total"  # binds onto nodes another instance owns
GANG_COMMITS = "tephra_scheduler_gang_commits_total"  # by outcome; "conflict": the ledger refused the gang
LEDGER_CONFLICTS = "tephra_scheduler_ledger_conflicts_total"  # capped-queue reservations refused
LOANS = "tephra_scheduler_loans_total"  # asks for room on another instance's nodes, by outcome
SHARD_RECORDS = "tephra_scheduler_shard_records_total"  # records of its shards an instance wrote, by outcome


@dataclass
class BoundPods:
    """The pods bucket as this process follows it: which pods have spec.nodeName."""

    total: int
    bound: set[str] = field(default_factory=set)
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    first_bound_at: float | None = None  # perf_counter() when the first bind was seen

    async def follow(self, store: NatsStore) -> None:
        """Until cancelled (which closes the watch's consumer: the connection then drains at once)."""
        async for ev in store.watch(Pod, namespace=NAMESPACE):
            if ev.op is WatchOp.SYNCED:
                self.synced.set()
            elif ev.op is WatchOp.PUT and isinstance(ev.obj, Pod) and ev.obj.spec and ev.obj.spec.node_name:
                self.bound.add(ev.name)
                if self.first_bound_at is None:
                    self.first_bound_at = time.perf_counter()
                if len(self.bound) >= self.total:
                    self.done.set()


def scheduler(index: int, url: str, flags: list[str]) -> Proc:
    """`vc-scheduler` as `vcctl up` starts scheduler-i (no credentials: this nats-server has no auth)."""
    name, port = f"scheduler-{index}", free_port()
    argv = [str(BIN / "vc-scheduler"), "--nats", url, "--health-port", str(port), "--instance", name]
    return Proc(name, [*argv, *flags], port)


async def seed(url: str, shape: Shape) -> float:
    """The default queues and every node, PodGroup and pod written; the seconds it took."""
    started = time.perf_counter()
    await ensure_default_queues(url)
    async with connect(url, name="bench-seed") as nc:
        store = NatsStore(nc)
        await store.ensure()
        with Progress("  writing nodes, PodGroups, pods", count(shape)) as progress:
            await write_all(store, shape, written=progress.update)
    return time.perf_counter() - started


async def wait_bound(pods: BoundPods, schedulers: list[Proc], logs: Path, timeout_s: float, label: str) -> None:
    """Until every pod is bound, `timeout_s` has passed, or a scheduler has exited (the end of its log
    printed: the run then reports what was bound)."""
    deadline = time.perf_counter() + timeout_s
    with Progress(label, pods.total) as progress:  # a cut-off run still says how far it got
        while not pods.done.is_set() and time.perf_counter() < deadline:
            if exited := [p for p in schedulers if p.proc and p.proc.poll() is not None]:
                for p in exited:
                    print(f"  {p.name} exited: {(logs / f'{p.name}.log').read_text()[-2000:]}", file=sys.stderr)
                break
            try:
                await asyncio.wait_for(pods.done.wait(), timeout=min(1.0, max(0.01, deadline - time.perf_counter())))
            except TimeoutError:
                progress.update(len(pods.bound))
        progress.update(len(pods.bound))


async def run_once(
    shape: Shape, k: int, timeout_s: float, flags: list[str], keep_logs: Path | None, spies: Spies
) -> RunFigures:
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "nats", sync=SYNC) as server:
        logs = Path(tmp) if keep_logs is None else _fresh(keep_logs / f"k{k}")
        logs.mkdir(parents=True, exist_ok=True)
        seed_s = await seed(server.url, shape)
        print(
            f"  k={k}: wrote {shape.nodes:,} nodes, {shape.gangs:,} PodGroups and {shape.pods:,} pods in {seed_s:.1f}s",
            flush=True,
        )
        schedulers = [scheduler(i, server.url, flags) for i in range(k)]
        pods = BoundPods(shape.pods)
        async with connect(server.url, name="bench-watch") as nc:
            watcher = asyncio.create_task(pods.follow(NatsStore(nc)))
            await pods.synced.wait()  # the bucket's present pods read before the clock starts
            before_ms = 1000 * reference_seconds()
            nats = CpuMeter({"nats-server": server.pid})
            nats.start()
            try:
                started = time.perf_counter()
                for p in schedulers:
                    p.start(logs)
                spies.start({p.name: p.pid for p in schedulers}, suffix=f"-k{k}")
                await wait_bound(pods, schedulers, logs, timeout_s, f"  k={k}: pods bound")
                seconds = time.perf_counter() - started
                # Start-up (imports, the cache's first read of the cluster) ends about at the first bind.
                first_bind_s = pods.first_bound_at - started if pods.first_bound_at is not None else None
                # Each process's CPU from its start (the meter is never started: from zero), and its
                # metrics, at the same moment.
                cpu = CpuMeter({p.name: p.pid for p in schedulers})
                cpu.stop()
                nats.stop()
                texts = {p.name: scrape(p.port) for p in schedulers}
            finally:
                spies.stop()
                for p in schedulers:
                    p.stop()
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher  # its subscription gone before the connection drains
            speed = Speed(before_ms, 1000 * reference_seconds())
    figures = RunFigures(
        instances=k,
        pods=shape.pods,
        bound=len(pods.bound),
        seconds=seconds,
        cpu_s=cpu.used,
        cycles={name: metric_sum(text, CYCLES) for name, text in texts.items()},
        opening_ms={name: metric_sum(text, OPENING) for name, text in texts.items()},
    )
    report(shape, figures, first_bind_s, cpu, nats, texts, speed)
    return figures


def report(
    shape: Shape,
    run: RunFigures,
    first_bind_s: float | None,
    cpu: CpuMeter,
    nats: CpuMeter,
    texts: dict[str, str],
    speed: Speed,
) -> None:
    k = run.instances
    outcome = "" if run.complete else f" TIMED OUT with {shape.pods - run.bound:,} unbound"
    print(
        f"scheduler scale-out [{shape.nodes:,} nodes, {shape.pods:,} pods in {shape.gangs:,} gangs of "
        f"{shape.gang}, {k} instance{'s' if k > 1 else ''}, fsync {SYNC}]: {run.bound:,} pods bound after "
        f"{run.seconds:.1f}s -> {run.pods_per_s:,.0f} pods/s{outcome}",
        flush=True,
    )
    if first_bind_s is not None:
        later = run.seconds - first_bind_s
        rate = f"{(run.bound - 1) / later:,.0f} pods/s" if later > 0 else "-"
        print(f"  first bind after {first_bind_s:.1f}s (start-up and first cycle); from it on {rate}")
    print(f"  schedulers, from their start: {cpu.report(run.bound)}; nats-server {nats.report(run.bound)}")
    cycles = ", ".join(
        f"{name} {ms:,.0f} ms over {run.cycles[name]:,.0f} cycles" if ms is not None else f"{name} no cycle"
        for name, ms in run.cycle_cpu_ms().items()
    )
    mean = run.mean_cycle_cpu_ms
    print(f"  cpu per cycle (cycles: {CYCLES}): {cycles}; mean {mean:,.0f} ms" if mean else f"  {cycles}")
    bodies = texts.values()
    foreign = total(bodies, FOREIGN_BINDS)
    declared = any(metric_declared(text, FOREIGN_BINDS) for text in bodies)
    note = f"({FOREIGN_BINDS})" if declared else f"(n/a: no {FOREIGN_BINDS} series)"
    print(f"  commits on other instances' nodes: {per_pod(foreign, run.bound):.3f} per pod {note}")
    refused = total(bodies, GANG_COMMITS, 'outcome="conflict"')
    outcomes: dict[str, float] = {}
    for text in bodies:
        for outcome, n in metric_by_label(text, GANG_COMMITS, "outcome").items():
            outcomes[outcome] = outcomes.get(outcome, 0.0) + n
    by_outcome = ", ".join(f"{outcome} {n:,.0f}" for outcome, n in sorted(outcomes.items(), key=lambda kv: -kv[1]))
    granted, denied = total(bodies, LOANS, 'outcome="granted"'), total(bodies, LOANS, 'outcome="refused"')
    print(
        f"  conflicts: {per_pod(refused, run.bound):.3f} gang commits refused per pod "
        f'({GANG_COMMITS}{{outcome="conflict"}}; commits by outcome: {by_outcome or "none"}), '
        f"{per_pod(total(bodies, LEDGER_CONFLICTS), run.bound):.3f} queue refusals per pod ({LEDGER_CONFLICTS}); "
        f"loans granted {granted:,.0f}, refused {denied:,.0f} ({LOANS})"
    )
    written = total(bodies, SHARD_RECORDS, 'outcome="written"')
    failed = total(bodies, SHARD_RECORDS, 'outcome="failed"')
    print(f"  shard records written {written:,.0f}, failed {failed:,.0f} ({SHARD_RECORDS})")
    print(f"  {speed.describe()}", flush=True)


def total(texts: Iterable[str], name: str, label: str = "") -> float:
    return sum(metric_sum(text, name, label) for text in texts)


def _fresh(path: Path) -> Path:
    """`path`, or `path`-2, -3... when a run of the same k already wrote there."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def instance_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--instances {text!r}: comma-separated whole numbers, e.g. 1,2,4,1") from None
    if not counts or any(k < 1 for k in counts):
        raise argparse.ArgumentTypeError(f"--instances {text!r}: each count must be at least 1")
    return counts


async def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scheduler_scaleout")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=100_000, help="pods, in gangs of 10 (a multiple of 10)")
    parser.add_argument(
        "--instances",
        type=instance_counts,
        default=[1, 2, 4, 1],
        help="scheduler counts in the order run, e.g. 1,2,4,1 (a k run twice counts both runs together)",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK.nodes:,} nodes, {QUICK.pods:,} pods")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each k has to bind every pod")
    parser.add_argument("--lease-ttl", type=float, help="the schedulers' --lease-ttl (default: theirs)")
    parser.add_argument(
        "--binds-per-cycle", type=int, help="the schedulers' --binds-per-cycle (default: theirs; 0: no bound)"
    )
    parser.add_argument("--logs", type=Path, help="keep the schedulers' logs here (DIR/k<k>/scheduler-<i>.log)")
    parser.add_argument(
        "--py-spy", type=Path, help="sample each scheduler with py-spy (collapsed stacks: DIR/scheduler-<i>-k<k>.txt)"
    )
    args = parser.parse_args()
    shape = QUICK if args.quick else Shape(nodes=args.nodes, pods=args.pods)
    if shape.nodes < 1 or shape.pods < shape.gang or shape.pods % shape.gang:
        parser.error(f"--nodes must be at least 1 and --pods a positive multiple of {shape.gang}")
    flags = [] if args.lease_ttl is None else ["--lease-ttl", str(args.lease_ttl)]
    if args.binds_per_cycle is not None:
        flags += ["--binds-per-cycle", str(args.binds_per_cycle)]
    runs: dict[int, list[RunFigures]] = {}
    for k in args.instances:
        runs.setdefault(k, []).append(await run_once(shape, k, args.timeout, flags, args.logs, Spies(args.py_spy)))
    merged = {k: together(of_k) for k, of_k in runs.items()}
    print(openings_line(merged))
    print(fixed_part_line(merged))
    print(summary_line(merged), flush=True)
    return 0 if all(run.complete for of_k in runs.values() for run in of_k) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

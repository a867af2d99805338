"""End to end gang load: N simulated nodes, M pods in vcjobs of 10 (minAvailable 10) submitted through
admission, every service a real process on one nats-server, for 1 and 2 scheduler instances.

    .venv/bin/python benchmarks/e2e_gang_load.py [--nodes 200] [--pods 2000] [--schedulers 1,2] [--profile DIR]
    .venv/bin/python benchmarks/e2e_gang_load.py --nodes 10000 --pods 100000     # the full target size

Reports the time from the first submit to the last pod Running, as pods/s, and where each job's time
goes, per stage (medians and p95 over jobs, from the store's change streams as this process sees them):

- admission:   submit request -> reply (the Job is stored);
- controller:  Job stored -> PodGroup created, plus PodGroup Inqueue -> the job's last pod created;
- scheduler:   PodGroup created -> Inqueue (enqueue), plus last pod created -> last pod bound (allocate + bind);
- bind:        from the scheduler's own metric: a cycle's decision (assume) -> the bind written;
- node-sim:    last pod bound -> last pod Running.

With --profile DIR every service runs under cProfile and the busiest ones' top functions are printed; the services'
logs are kept in DIR too (the scheduler logs each cycle's duration and its sharding overhead). --logs DIR keeps the
logs alone, one folder per run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import pstats
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.machine import Speed, reference_seconds
from benchmarks.pacing import describe_stalls, pacing, stalls
from benchmarks.placement_check import RunningPod, check_placement
from benchmarks.procstat import CpuMeter, MemoryMeter, Spies, cpu_seconds
from benchmarks.progress import Progress
from benchmarks.report import BenchReport, running_curve
from benchmarks.services import Proc, metric_sum, scrape, wait_ready
from benchmarks.streamstat import describe, stream_sequences, writes_per_pod
from vc_bus.connection import connect
from vc_bus.server import NatsServer, SyncMode, free_port
from vc_bus.store import NatsStore
from vc_cli.client import Tephra
from vc_cli.up import ensure_default_queues
from vc_core.errors import NotFound
from vc_core.pod_requests import pod_requests
from vc_core.resources import Resources, parse_resources
from vc_core.store import WatchOp
from vc_proto import api
from vc_proto.batch import Job
from vc_proto.core import Node, Pod
from vc_proto.scheduling import PodGroup

BIN = Path(sys.executable).parent
GANG = 10
STALL_S = 3.0  # quiet times longer than this are listed, for pods Running and for binds


@dataclass
class Timeline:
    submitted: dict[str, float] = field(default_factory=dict)
    admitted: dict[str, float] = field(default_factory=dict)
    job_seen: dict[str, float] = field(default_factory=dict)
    pg_seen: dict[str, float] = field(default_factory=dict)
    pg_inqueue: dict[str, float] = field(default_factory=dict)
    pod_created: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    pod_bound: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    pod_running: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))
    running: int = 0
    running_at: list[float] = field(default_factory=list)  # when each pod was first seen Running, in order
    bound_at: list[float] = field(default_factory=list)  # when each pod was first seen bound, in order
    placed: list[RunningPod] = field(default_factory=list)  # each pod first seen Running: its gang, node, requests
    min_member: dict[str, int] = field(default_factory=dict)  # PodGroup key -> its minMember
    done: asyncio.Event = field(default_factory=asyncio.Event)


def job_of_pod(pod: Pod) -> str:
    return (pod.metadata.labels or {}).get("volcano.sh/job-name", "")


def job_of_group(pg: PodGroup) -> str:
    owners = pg.metadata.owner_references or []
    return next((o.name for o in owners if o.kind == "Job"), "") or ""


async def follow(store: NatsStore, tl: Timeline, total: int) -> None:
    async def pods() -> None:
        async for ev in store.watch(Pod, namespace="bench"):
            if ev.op is not WatchOp.PUT or ev.obj is None:
                continue
            pod, now = ev.obj, time.perf_counter()
            job, name = job_of_pod(pod), ev.name  # type: ignore[arg-type]
            tl.pod_created[job].setdefault(name, now)
            if pod.spec and pod.spec.node_name and name not in tl.pod_bound[job]:
                tl.pod_bound[job][name] = now
                tl.bound_at.append(now)
            if pod.status and pod.status.phase == "Running" and name not in tl.pod_running[job]:
                tl.pod_running[job][name] = now
                tl.running_at.append(now)
                tl.placed.append(placed(pod))
                tl.running += 1
                if tl.running >= total:
                    tl.done.set()
                    return

    async def groups() -> None:
        async for ev in store.watch(PodGroup, namespace="bench"):
            if ev.op is not WatchOp.PUT or ev.obj is None:
                continue
            pg, now = ev.obj, time.perf_counter()
            job = job_of_group(pg)  # type: ignore[arg-type]
            tl.pg_seen.setdefault(job, now)
            tl.min_member[f"{pg.metadata.namespace}/{pg.metadata.name}"] = pg.spec.min_member if pg.spec else 0
            if pg.status and pg.status.phase in ("Inqueue", "Running"):  # type: ignore[union-attr]
                tl.pg_inqueue.setdefault(job, now)

    async def jobs() -> None:
        async for ev in store.watch(Job, namespace="bench"):
            if ev.op is WatchOp.PUT:
                tl.job_seen.setdefault(ev.name, time.perf_counter())

    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(pods()), tg.create_task(groups()), tg.create_task(jobs())]
        await tl.done.wait()
        for t in tasks:
            t.cancel()


def placed(pod: Pod) -> RunningPod:
    group = (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name", "")
    requests = pod_requests(pod.spec, lenient=True)
    requests.pop("pods", None)
    node = pod.spec.node_name if pod.spec else ""
    return RunningPod(f"{pod.metadata.namespace}/{group}", node or "", requests)


async def allocatable_of_nodes(store: NatsStore, names: Iterable[str]) -> dict[str, Resources]:
    """The allocatable of every node in `names`: one listing, and a read of each node it missed (a node
    written while the listing ran can be left out of it)."""

    def allocatable(node: Node) -> Resources:
        return parse_resources(node.status.allocatable if node.status else None, field="status.allocatable")

    listed, _ = await store.list(Node)
    found = {n.metadata.name or "": allocatable(n) for n in listed}
    for name in set(names) - found.keys():
        with contextlib.suppress(NotFound):
            found[name] = allocatable(await store.get(Node, None, name))
    return found


def vcjob(name: str) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": {"sim.tephra.dev/duration": "1h"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}}}
            ],
        },
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": GANG,
            "queue": "default",
            "tasks": [{"name": "w", "replicas": GANG, "template": template}],
        },
    }


async def submit_all(url: str, tl: Timeline, jobs: int, concurrency: int) -> None:
    async with connect(url, name="bench-submit") as nc:
        tephra = Tephra(nc)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> None:
            name = f"g{i:06d}"
            async with gate:
                tl.submitted[name] = time.perf_counter()
                await tephra.submit(api.Create, vcjob(name), namespace="bench")
                tl.admitted[name] = time.perf_counter()

        await asyncio.gather(*(one(i) for i in range(jobs)))


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def stage_report(tl: Timeline) -> list[tuple[str, list[float]]]:
    admission, controller, enqueue, allocate, nodesim = [], [], [], [], []
    for job, admitted in tl.admitted.items():
        created, bound, running = tl.pod_created.get(job, {}), tl.pod_bound.get(job, {}), tl.pod_running.get(job, {})
        if job not in tl.pg_seen or job not in tl.pg_inqueue or len(running) < GANG:
            continue
        admission.append(admitted - tl.submitted[job])
        last_created, last_bound, last_running = max(created.values()), max(bound.values()), max(running.values())
        controller.append(max(0.0, tl.pg_seen[job] - admitted) + max(0.0, last_created - tl.pg_inqueue[job]))
        enqueue.append(max(0.0, tl.pg_inqueue[job] - tl.pg_seen[job]))
        allocate.append(max(0.0, last_bound - last_created))
        nodesim.append(max(0.0, last_running - last_bound))
    return [
        ("admission", admission),
        ("controller", controller),
        ("scheduler:enqueue", enqueue),
        ("scheduler:allocate+bind", allocate),
        ("node-sim", nodesim),
    ]


async def run_once(
    nodes: int,
    pods: int,
    schedulers: int,
    concurrency: int,
    profile: Path | None,
    scheduler_flags: list[str],
    sync: SyncMode,
    spy: Path | None = None,
    report: BenchReport | None = None,
    keep_logs: Path | None = None,
) -> dict[str, float]:
    jobs = pods // GANG
    if keep_logs is not None:  # one folder per run: the runs of one invocation share service names
        keep_logs = keep_logs / f"{schedulers}-scheduler-{time.strftime('%H%M%S')}"
        keep_logs.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "nats", sync=sync) as server:
        logs = profile or keep_logs or Path(tmp)  # with --profile the service logs are kept next to the profiles
        await ensure_default_queues(server.url)
        common = ["--nats", server.url]

        def proc(name: str, binary: str, extra: list[str]) -> Proc:
            port = free_port()
            launch = [str(BIN / binary)]
            if profile:  # the same entry point under cProfile: vc-job-controller -> -m vc_job_controller
                out = str(profile / f"{name}-{schedulers}.prof")
                launch = [sys.executable, "-m", "cProfile", "-o", out, "-m", binary.replace("-", "_")]
            argv = [*launch, *common, "--health-port", str(port), "--instance", name, *extra]
            return Proc(name, argv, port)

        procs = [
            proc("admission", "vc-admission", []),
            proc("queue-controller", "vc-queue-controller", []),
            proc("podgroup-controller", "vc-podgroup-controller", []),
            proc("job-controller", "vc-job-controller", []),
        ]
        sched_args = ["--schedule-period", "1", *scheduler_flags]
        sched_procs = [proc(f"scheduler-{i}", "vc-scheduler", sched_args) for i in range(schedulers)]
        procs += sched_procs
        procs.append(
            proc("node-sim", "vc-node-sim", ["--nodes", str(nodes), "--start-delay", "0", "--heartbeat-period", "600"])
        )
        try:
            for p in procs:
                p.start(logs)
            await wait_ready(procs, logs)
            tl = Timeline()
            async with connect(server.url, name="bench-watch") as nc:
                store = NatsStore(nc)
                watcher = asyncio.create_task(follow(store, tl, pods))
                await asyncio.sleep(0.5)
                pids = {p.name: (p.proc.pid if p.proc else None) for p in procs} | {"nats-server": server.pid}
                meter, memory, spies = CpuMeter(pids), MemoryMeter(pids), Spies(spy)
                sequences = await stream_sequences(nc)
                before_ms = 1000 * reference_seconds()  # the services idle: this process has a core to itself
                meter.start()
                memory.start()
                spies.start(pids, suffix=f"-{schedulers}")
                start = time.perf_counter()
                await submit_all(server.url, tl, jobs, concurrency)
                submit_s = time.perf_counter() - start
                deadline = time.perf_counter() + max(600.0, pods / 20)
                with Progress("  pods Running", pods) as progress:  # a cut-off run still says how far it got
                    while not tl.done.is_set() and time.perf_counter() < deadline:
                        try:
                            await asyncio.wait_for(tl.done.wait(), timeout=1)
                        except TimeoutError:
                            progress.update(tl.running)
                    progress.update(tl.running)
                if not tl.done.is_set():
                    print(f"  timed out: {tl.running}/{pods} pods Running", flush=True)
                total_s = time.perf_counter() - start
                watcher.cancel()
                writes = writes_per_pod(sequences, await stream_sequences(nc), tl.running)
                placement = check_placement(
                    tl.placed, tl.min_member, await allocatable_of_nodes(store, {p.node for p in tl.placed})
                )
                speed = Speed(before_ms, 1000 * reference_seconds())
            cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
            meter.stop()
            memory.stop()
            spies.stop()
            await asyncio.sleep(2.0)  # the last gangs' bind events are still being published
            texts = [scrape(p.port) for p in sched_procs]
            if profile:  # every service's metrics next to its profile
                for p in procs:
                    (profile / f"{p.name}-{schedulers}.metrics").write_text(scrape(p.port))
        finally:
            for p in reversed(procs):
                p.stop()
    bind_sum = sum(metric_sum(t, "volcano_task_scheduling_latency_milliseconds_sum") for t in texts)
    bind_count = sum(metric_sum(t, "volcano_task_scheduling_latency_milliseconds_count") for t in texts)
    cycle_sum = sum(metric_sum(t, "volcano_e2e_scheduling_latency_milliseconds_sum") for t in texts)
    cycles = sum(metric_sum(t, "volcano_e2e_scheduling_latency_milliseconds_count") for t in texts)
    gangs = sum(metric_sum(t, "tephra_scheduler_gang_commits_total") for t in texts)
    gang_conflicts = sum(metric_sum(t, "tephra_scheduler_gang_commits_total", 'outcome="conflict"') for t in texts)
    conflicts = sum(metric_sum(t, "tephra_scheduler_ledger_conflicts_total") for t in texts)
    retries = sum(metric_sum(t, "tephra_scheduler_ledger_retries_total") for t in texts)
    print(
        f"e2e gang load [{nodes:,} nodes, {pods:,} pods in {jobs:,} gangs of {GANG}, {schedulers} scheduler(s), "
        f"fsync {sync}]: "
        f"{tl.running:,} pods Running after {total_s:.1f}s -> {tl.running / total_s:,.0f} pods/s "
        f"(submit {submit_s:.1f}s = {jobs / submit_s:,.0f} jobs/s)",
        flush=True,
    )
    paced = pacing(tl.running_at, start)
    if paced is not None:
        print(f"  pace: {paced.describe()}", flush=True)
        quiet = [describe_stalls(stalls(t, start, over_s=STALL_S)) for t in (tl.running_at, tl.bound_at)]
        print(f"  stalls over {STALL_S:.0f}s: pods Running {quiet[0]}; binds {quiet[1]}", flush=True)
    print(f"  placement at the end: {placement.describe()}", flush=True)
    for name, values in stage_report(tl):
        median = statistics.median(values) if values else float("nan")
        print(f"  {name:<26} median {median:7.2f}s  p95 {pct(values, 0.95):7.2f}s")
    print(
        f"  {'bind (assume -> written)':<26} mean {bind_sum / max(1, bind_count):7.0f}ms over {bind_count:,.0f} binds; "
        f"{cycles:,.0f} cycles, mean {cycle_sum / max(1, cycles):,.0f}ms",
        flush=True,
    )
    rate = 100 * gang_conflicts / max(1, gangs)
    print(
        f"  ledger: {gangs:,.0f} gang commits, {gang_conflicts:,.0f} refused ({rate:.1f}%; {conflicts:,.0f} node/queue "
        f"refusals), {retries:,.0f} CAS retries",
        flush=True,
    )
    scheduler_writes = {  # the scheduler's writes to the store, per pod Running (each a JetStream request)
        "binds": "tephra_scheduler_binds_total",
        "ledger": "tephra_scheduler_ledger_writes_total",
        "PodGroup status": "tephra_scheduler_podgroup_status_writes_total",
        "queue status": "tephra_scheduler_queue_status_writes_total",
    }
    per_pod = {
        name: sum(metric_sum(t, metric) for t in texts) / max(1, tl.running)
        for name, metric in scheduler_writes.items()
    }
    print("  scheduler writes per pod: " + ", ".join(f"{name} {n:.2f}" for name, n in per_pod.items()), flush=True)
    each = " (each an fsync)" if sync == "always" else ""
    print(f"  JetStream writes{each}, first submit -> last Running: {describe(writes)}", flush=True)
    busiest = sorted(cpu.items(), key=lambda kv: -kv[1])
    print("  cpu seconds (whole run): " + ", ".join(f"{name} {seconds:.1f}" for name, seconds in busiest), flush=True)
    per_pod_ms = 1000 * sum(meter.used.values()) / max(1, tl.running)
    print(f"  first submit -> last Running, all processes: {meter.report(tl.running)}", flush=True)
    print(f"  {speed.describe()}: {speed.in_references(per_pod_ms / 1000):.3f} references per pod", flush=True)
    print(f"  memory, peak RSS (what the load added, per pod Running): {memory.report(tl.running)}", flush=True)
    if profile:
        for name, _ in busiest[:3]:
            path = profile / f"{name}-{schedulers}.prof"
            if path.exists():
                print(f"  -- profile of {name} (internal time, top 30; the main thread only)")
                pstats.Stats(str(path)).sort_stats("tottime").print_stats(30)
    figures = {
        "pods_per_s": tl.running / total_s,
        "total_s": total_s,
        "cpu_ms_per_pod": per_pod_ms,
        "reference_ms": speed.mean_ms,
        "references_per_pod": speed.in_references(per_pod_ms / 1000),
        **{f"bytes_per_pod[{name}]": per_pod for name, per_pod in memory.per_pod(tl.running).items()},
    }
    if report is not None:
        running = running_curve((t for times in tl.pod_running.values() for t in times.values()), start)
        report.add(f"tephra, {schedulers} scheduler{'s' if schedulers > 1 else ''}", figures, running)
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--schedulers", default="1,2", help="comma-separated instance counts to run")
    parser.add_argument("--concurrency", type=int, default=32, help="submits in flight")
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=5.0,
        help="scheduler lease, seconds (the services' default)",
    )
    parser.add_argument(
        "--binds-per-cycle", type=int, help="the schedulers' --binds-per-cycle (default: theirs; 0: no bound)"
    )
    parser.add_argument("--profile", type=Path, help="run every service under cProfile, keep profiles and logs here")
    parser.add_argument("--logs", type=Path, help="keep the services' logs here")
    parser.add_argument(
        "--py-spy", type=Path, help="sample every service with py-spy during the load (collapsed stacks in this folder)"
    )
    parser.add_argument(
        "--sync",
        choices=("always", "default"),
        default="always",
        help="nats-server fsync: before every acknowledgement (always) or the JetStream default (every 2 min)",
    )
    args = parser.parse_args()
    for folder in (args.profile, args.py_spy, args.logs):
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
    title = f"E2E gang load: {args.pods:,} pods on {args.nodes:,} nodes (fsync {args.sync})"
    report = BenchReport("e2e_gang_load", title, params=vars(args))
    scheduler_flags = ["--lease-ttl", str(args.lease_ttl)]
    if args.binds_per_cycle is not None:
        scheduler_flags += ["--binds-per-cycle", str(args.binds_per_cycle)]
    for count in (int(c) for c in args.schedulers.split(",")):
        await run_once(
            args.nodes,
            args.pods,
            count,
            args.concurrency,
            args.profile,
            scheduler_flags,
            args.sync,
            args.py_spy,
            report,
            args.logs,
        )
    print("  results: " + ", ".join(str(p) for p in report.write()), flush=True)


if __name__ == "__main__":
    asyncio.run(main())

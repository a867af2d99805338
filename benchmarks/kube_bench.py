"""make bench-kube: Tephra, then kube-scheduler, on the same real kube-apiserver in the same run.

1. Tephra: every service on `--backend kube` (plus the relay and node-sim's hollow nodes); gang
   vcjobs are created on the apiserver; pods/s = pods bound / (last bind - first create).
2. kube-scheduler (built by scripts/kube/build.sh), twice on the same nodes with the same number of
   plain pods and the same requests: at its default client rate limit (50 QPS, 100 burst: that run
   measures the limiter) and at --kube-api-qps/--kube-api-burst 5000 (the fair peer).
3. The seeds' deadlock case for both: 4 one-GPU nodes, two 4-pod jobs. A gang scheduler places one
   job whole; the default scheduler places pods regardless of their group (2 + 2: both jobs stuck).

For every run: CPU seconds of every process over the load phase (kube-apiserver, etcd and nats-server included)
and apiserver requests per pod by verb and resource (from the apiserver's own request counter).
Tephra's rate is printed as a ratio to the unthrottled kube-scheduler's. Needs `make kube-up`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks import apiserver_profile
from benchmarks.procstat import CpuMeter, Spies
from benchmarks.progress import Progress
from benchmarks.report import BenchReport, running_curve
from vc_bus.server import NatsServer
from vc_core.errors import TemporaryError
from vc_core.store import WatchOp
from vc_kube.client import KubeApiError, KubeClient, resource_path
from vc_kube.crds import ensure_crds
from vc_kube.store import KubeStore
from vc_kube.watching import list_raw, watch_kind
from vc_proto.codec import from_dict
from vc_proto.core import Pod
from vc_proto.kinds import KINDS
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, PodGroup, Queue, QueueSpec, QueueStatus

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NAMESPACE = "bench"
SERVICES = ("admission", "queue-controller", "podgroup-controller", "job-controller", "scheduler", "node-sim")
TEPHRA_WRITERS = ("admission", "queue-controller", "podgroup-controller", "job-controller", "scheduler")


@dataclass
class Result:
    system: str
    pods: int
    bound: int
    seconds: float
    whole: str = ""  # gangs placed whole, e.g. "500/500"
    cpu: str = ""
    requests: str = ""
    stages: str = ""
    latencies: str = ""  # mean latencies inside Tephra's services over the phase
    tls: str = ""  # TLS handshakes Tephra's services made with the apiserver over the phase
    apiserver_profile: str = ""  # where the apiserver's CPU went (--apiserver-profile), and the file
    bound_curve: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, pods bound)

    @property
    def rate(self) -> float:
        return self.bound / self.seconds if self.seconds > 0 else 0.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Procs:
    """Background processes of one run, each logging to workdir/<name>.log; stopped together."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.metrics_ports: dict[str, int] = {}  # service -> its /metrics port (Tephra's services)

    def start(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

    def pids(self) -> dict[str, int | None]:
        return {name: proc.pid for name, proc in self.procs.items() if proc.poll() is None}

    def stop(self, *names: str) -> None:
        for name in names or list(self.procs):
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def apiserver_pids() -> dict[str, int | None]:
    """kube-apiserver and etcd as `make kube-up` started them (their pid files under .kube/run)."""
    run = ROOT / ".kube" / "run"
    out: dict[str, int | None] = {}
    for name, file in (("kube-apiserver", "apiserver.pid"), ("etcd", "etcd.pid")):
        with contextlib.suppress(OSError, ValueError):
            out[name] = int((run / file).read_text().strip())
    return out


@contextlib.contextmanager
def nats(workdir: Path) -> Iterator[NatsServer]:
    server = NatsServer(workdir / "nats")
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- the apiserver's own request counter ---------------------------------------------------------------
_REQUEST = re.compile(r"^apiserver_request_(total|duration_seconds_sum)\{([^}]*)\} ([0-9.e+]+)$", re.M)
_LABEL = re.compile(r'(\w+)="([^"]*)"')
Requests = Counter[tuple[str, str]]


@dataclass
class ApiserverReading:
    """apiserver_request_total and the seconds it spent on them, by (verb, resource[/subresource])."""

    counts: Requests = field(default_factory=Counter)
    seconds: dict[tuple[str, str], float] = field(default_factory=dict)


async def request_counts(kube: KubeClient) -> ApiserverReading:
    """The apiserver's request counter and its time spent per request kind, from /metrics."""
    text = (await kube.request_bytes("GET", "/metrics")).decode()
    reading = ApiserverReading()
    for match in _REQUEST.finditer(text):
        labels = dict(_LABEL.findall(match.group(2)))
        resource = labels.get("resource", "")
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        key = (labels.get("verb", ""), resource)
        if match.group(1) == "total":
            reading.counts[key] += int(float(match.group(3)))
        else:
            reading.seconds[key] = reading.seconds.get(key, 0.0) + float(match.group(3))
    return reading


def per_pod(before: ApiserverReading, after: ApiserverReading, pods: int) -> str:
    """'X req/pod [VERB resource n (server ms each), ...]' for the requests made between the readings;
    the server's own time per request tells its queueing apart from the client's."""
    delta = Counter({k: n - before.counts.get(k, 0) for k, n in after.counts.items() if n > before.counts.get(k, 0)})
    watches = {k for k in delta if k[0] in ("WATCH", "WATCHLIST")}  # streams, not per-pod work
    for key in watches:
        del delta[key]
    total = sum(delta.values())

    def server_ms(key: tuple[str, str], n: int) -> str:
        spent = after.seconds.get(key, 0.0) - before.seconds.get(key, 0.0)
        return f" ({1000 * spent / n:.0f} ms)" if n else ""

    busiest = ", ".join(
        f"{verb} {res} {n / max(1, pods):.2f}{server_ms((verb, res), n)}" for (verb, res), n in delta.most_common(8)
    )
    return f"{total / max(1, pods):.2f} req/pod [{busiest}]"


# --- the services' own metrics -------------------------------------------------------------------------


async def service_samples(ports: dict[str, int]) -> dict[str, dict[tuple[str, str, str], float]]:
    """Per service: (histogram, labels, sum|count) -> value, and (counter, labels, "total") for the
    counters in _COUNTERS, from each service's /metrics."""
    out: dict[str, dict[tuple[str, str, str], float]] = {}
    async with aiohttp.ClientSession() as http:
        for service, port in ports.items():
            try:
                async with http.get(f"http://127.0.0.1:{port}/metrics", timeout=aiohttp.ClientTimeout(total=10)) as r:
                    text = await r.text()
            except (aiohttp.ClientError, TimeoutError, OSError):
                continue
            samples: dict[tuple[str, str, str], float] = {}
            for line in text.splitlines():
                if line.startswith(_COUNTERS):
                    name_labels, _, value = line.rpartition(" ")
                    name, _, labels = name_labels.partition("{")
                    samples[(name.removesuffix("_total"), labels.rstrip("}"), "total")] = float(value)
                    continue
                if line.startswith("#") or not ("_sum" in line or "_count" in line):
                    continue
                name_labels, _, value = line.rpartition(" ")
                name, _, labels = name_labels.partition("{")
                part = "sum" if name.endswith("_sum") else "count" if name.endswith("_count") else ""
                if part:
                    samples[(name.rsplit("_", 1)[0], labels.rstrip("}"), part)] = float(value)
            out[service] = samples
    return out


# Latencies worth printing per service: where a pod's time goes inside Tephra.
_LATENCIES = {
    "tephra_kube_request_seconds": "apiserver",
    "tephra_relay_kv_ack_seconds": "relay KV ack",
    "tephra_job_controller_reconcile_seconds": "reconcile",
}


_COUNTERS = ("tephra_kube_tls_handshakes_total{",)


def handshakes(
    before: dict[str, dict[tuple[str, str, str], float]], after: dict[str, dict[tuple[str, str, str], float]]
) -> str:
    """'N full, M resumed' over the phase, all services together (vc_kube.tls)."""
    counts = {"false": 0.0, "true": 0.0}
    for service, samples in after.items():
        old = before.get(service, {})
        for (name, labels, part), total in samples.items():
            if name == "tephra_kube_tls_handshakes" and part == "total":
                resumed = labels.partition("=")[2].strip('"')
                counts[resumed] = counts.get(resumed, 0.0) + total - old.get((name, labels, part), 0.0)
    if not any(counts.values()):
        return ""
    return f"{int(counts['false'])} full, {int(counts['true'])} resumed"


def latencies(
    before: dict[str, dict[tuple[str, str, str], float]], after: dict[str, dict[tuple[str, str, str], float]]
) -> str:
    """'service: what mean (count), ...' over the phase, for the histograms in _LATENCIES."""
    parts = []
    for service, samples in sorted(after.items()):
        old = before.get(service, {})
        figures = []
        for (name, labels, part), total in sorted(samples.items()):
            if part != "sum" or name not in _LATENCIES:
                continue
            count = samples.get((name, labels, "count"), 0.0) - old.get((name, labels, "count"), 0.0)
            spent = total - old.get((name, labels, "sum"), 0.0)
            if count >= 1:
                label = _LATENCIES[name] + (f" {labels.split('=')[1].strip(chr(34))}" if labels else "")
                figures.append(f"{label} {1000 * spent / count:.0f} ms x{int(count)}")
        if figures:
            parts.append(f"{service}: " + ", ".join(figures))
    return "; ".join(parts)


# --- objects -------------------------------------------------------------------------------------------
def gang_job(name: str, size: int, *, gpu: bool) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "128Mi", **({"nvidia.com/gpu": "1"} if gpu else {})}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "minAvailable": size,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "w",
                    "replicas": size,
                    "template": {
                        "metadata": {"annotations": {"sim.tephra.dev/duration": "1h"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "w",
                                    "image": "busybox",
                                    "resources": {
                                        "requests": requests,
                                        "limits": {k: v for k, v in requests.items() if k == "nvidia.com/gpu"},
                                    },
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


def plain_pod(name: str, *, gpu: bool, group: str) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "128Mi", **({"nvidia.com/gpu": "1"} if gpu else {})}
    limits = {"nvidia.com/gpu": "1"} if gpu else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"group": group},
            "annotations": {"sim.tephra.dev/duration": "1h"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [{"name": "w", "image": "busybox", "resources": {"requests": requests, "limits": limits}}],
        },
    }


async def create_all(
    kube: KubeClient, docs: list[dict[str, Any]], *, parallel: int = 32, created: dict[str, float] | None = None
) -> None:
    store = KubeStore(kube)
    gate = asyncio.Semaphore(parallel)

    async def create(doc: dict[str, Any]) -> None:
        async with gate:
            await store.create(from_dict(doc))
        if created is not None:
            created[doc["metadata"]["name"]] = time.monotonic()

    await asyncio.gather(*(create(d) for d in docs))


async def default_queue(kube: KubeClient) -> None:
    store = KubeStore(kube)
    for name, reclaimable in (("root", False), ("default", True)):
        spec = QueueSpec(weight=1, reclaimable=reclaimable, parent=None if name == "root" else "root")
        queue = Queue(
            api_version=SCHEDULING_V1BETA1, metadata=ObjectMeta(name=name), spec=spec, status=QueueStatus(state="Open")
        )
        with contextlib.suppress(Exception):  # already there from an earlier run
            await store.create(queue)


# --- clean-up ------------------------------------------------------------------------------------------
async def _delete_paths(kube: KubeClient, paths: list[str], *, parallel: int = 32) -> None:
    gate = asyncio.Semaphore(parallel)
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}

    async def delete(path: str) -> None:
        async with gate:
            with contextlib.suppress(KubeApiError):
                await kube.request("DELETE", path, body=options)

    await asyncio.gather(*(delete(p) for p in paths))


async def wipe(kube: KubeClient) -> None:
    """Delete every Tephra-kind object outside the system namespaces (nodes included), after any
    tephra-* webhook configuration a killed install test left (they fail closed: no vcjob could be made)."""
    for plural in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        path = f"/apis/admissionregistration.k8s.io/v1/{plural}"
        names = [c["metadata"]["name"] for c in (await kube.request("GET", path))["items"]]
        await _delete_paths(kube, [f"{path}/{name}" for name in names if name.startswith("tephra-")])
    for row in KINDS.values():
        items, _ = await list_raw(kube, row, None)
        paths = []
        for raw in items:
            meta = raw["metadata"]
            ns, name = meta.get("namespace"), meta["name"]
            if ns in ("kube-system", "kube-public", "kube-node-lease", "tephra-system"):
                continue
            if (row.kind == "Service" and name == "kubernetes") or (
                row.kind == "PriorityClass" and name.startswith("system-")
            ):
                continue
            paths.append(resource_path(row, ns, name))
        await _delete_paths(kube, paths)


async def wipe_namespace(kube: KubeClient) -> None:
    """Jobs, podgroups, pods and plugin objects of the bench namespace (nodes stay)."""
    for kind in ("Job", "PodGroup", "Pod", "Service", "ConfigMap", "Secret", "NetworkPolicy"):
        row = KINDS[kind]
        items, _ = await list_raw(kube, row, NAMESPACE)
        await _delete_paths(kube, [resource_path(row, NAMESPACE, i["metadata"]["name"]) for i in items])
    for _ in range(600):  # pods with gracePeriodSeconds 0 go at once; wait until the list is empty
        items, _ = await list_raw(kube, KINDS["Pod"], NAMESPACE)
        if not items:
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("bench pods not deleted after 5 minutes")


# --- progress ------------------------------------------------------------------------------------------
@dataclass
class Binds:
    """Pods bound in the bench namespace, from one watch (a list every half second would load the
    apiserver as much as the system under test)."""

    bound: dict[str, str] = field(default_factory=dict)  # pod name -> node
    last_bind: float = 0.0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    seen_at: dict[str, float] = field(default_factory=dict)  # pod name -> when the watch first showed it
    bound_at: dict[str, float] = field(default_factory=dict)  # pod name -> when it showed it bound

    async def follow(self, kube: KubeClient) -> None:
        async for change in watch_kind(kube, KINDS["Pod"], namespace=NAMESPACE):
            if change.op is not WatchOp.PUT or not isinstance(change.obj, Pod):
                continue
            now = time.monotonic()
            self.seen_at.setdefault(change.name, now)
            node = change.obj.spec.node_name if change.obj.spec else None
            if node and change.name not in self.bound:
                self.bound[change.name] = node
                self.bound_at[change.name] = now
                self.last_bind = now
                self.changed.set()

    async def wait(self, want: int, *, stall_s: float, progress: Progress | None = None) -> None:
        """Until `want` pods are bound, or nothing new binds for `stall_s`."""
        while len(self.bound) < want:
            self.changed.clear()
            try:
                async with asyncio.timeout(stall_s):
                    await self.changed.wait()
            except TimeoutError:
                return
            if progress is not None:
                progress.update(len(self.bound))


@dataclass
class Stages:
    """Where a gang's time goes, per gang (Tephra's pods are <job>-<task>-<i>): the job's create answered
    -> its PodGroup Inqueue -> all its pods created -> all bound. Watch times, so each includes the
    watch's own delivery; a stage's median says which part of the pipeline the gangs wait in."""

    job_created: dict[str, float] = field(default_factory=dict)
    inqueue_at: dict[str, float] = field(default_factory=dict)  # job name -> its PodGroup first Inqueue

    async def follow_podgroups(self, kube: KubeClient) -> None:
        async for change in watch_kind(kube, KINDS["PodGroup"], namespace=NAMESPACE):
            pg = change.obj
            if change.op is not WatchOp.PUT or not isinstance(pg, PodGroup) or pg.status is None:
                continue
            owner = next((r.name for r in pg.metadata.owner_references or [] if r.kind == "Job"), None)
            if owner and pg.status.phase in ("Inqueue", "Running") and owner not in self.inqueue_at:
                self.inqueue_at[owner] = time.monotonic()

    def report(self, binds: Binds) -> str:
        gangs: dict[str, list[str]] = {}
        for pod in binds.seen_at:
            gangs.setdefault(pod.rsplit("-", 2)[0], []).append(pod)
        spans: dict[str, list[float]] = {"job->Inqueue": [], "Inqueue->pods": [], "pods->bound": [], "job->bound": []}
        for job, created in self.job_created.items():
            pods = gangs.get(job, [])
            if not pods or not all(p in binds.bound_at for p in pods):
                continue
            all_seen = max(binds.seen_at[p] for p in pods)
            all_bound = max(binds.bound_at[p] for p in pods)
            inqueue = self.inqueue_at.get(job)
            if inqueue is not None:
                spans["job->Inqueue"].append(inqueue - created)
                spans["Inqueue->pods"].append(all_seen - inqueue)
            spans["pods->bound"].append(all_bound - all_seen)
            spans["job->bound"].append(all_bound - created)
        return ", ".join(f"{name} {_percentiles(values)}" for name, values in spans.items() if values)


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return f"p50 {at(0.5):.1f}s p90 {at(0.9):.1f}s"


def backlog(binds: Binds) -> str:
    """The most pods created but not yet bound at any moment (high: the scheduler is behind; low: pods
    are bound as fast as they come, and the controllers creating them set the pace)."""
    events = sorted([(t, 1) for t in binds.seen_at.values()] + [(t, -1) for t in binds.bound_at.values()])
    waiting = peak = 0
    for _, step in events:
        waiting += step
        peak = max(peak, waiting)
    return f"at most {peak} pods created and unbound"


async def wait_nodes(kube: KubeClient, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        items, _ = await list_raw(kube, KINDS["Node"], None)
        ready = [n for n in items if not (n.get("spec") or {}).get("taints")]
        if len(ready) >= count:
            return
        await asyncio.sleep(1)
    raise TimeoutError(f"{count} nodes not Ready after {timeout_s}s")


def gangs_whole(bound: dict[str, str], *, size: int, by_label: dict[str, str] | None = None) -> tuple[int, int]:
    """(groups with `size` pods bound, groups with any pod bound); Tephra's pods are <job>-<task>-<i>."""
    groups: Counter[str] = Counter()
    for pod in bound:
        groups[by_label[pod] if by_label is not None else pod.rsplit("-", 2)[0]] += 1
    return sum(1 for c in groups.values() if c >= size), len(groups)


# --- the runs ------------------------------------------------------------------------------------------
def start_tephra(procs: Procs, nats_url: str, kubeconfig: str, *, nodes: int, gpu: str) -> None:
    common = ["--nats", nats_url, "--backend", "kube", "--kubeconfig", kubeconfig, "--log-level", "warning"]
    procs.metrics_ports["kube-relay"] = port = _free_port()
    procs.start("kube-relay", [str(BIN / "vc-kube-relay"), *common, "--health-port", str(port)])
    for service in SERVICES:
        procs.metrics_ports[service] = port = _free_port()
        common_here = [*common, "--health-port", str(port)]
        extra: list[str] = []
        if service == "scheduler":
            extra = ["--schedule-period", "0.5"]
        elif service == "node-sim":
            extra = ["--nodes", str(nodes), "--node-gpu", gpu, "--node-prefix", "bench-", "--heartbeat-period", "600"]
        procs.start(service, [str(BIN / f"vc-{service}"), *common_here, *extra])


def kube_scheduler_argv(binary: Path, kubeconfig: str, qps: int | None) -> list[str]:
    argv = [
        str(binary),
        "--kubeconfig",
        kubeconfig,
        "--leader-elect=false",
        "--port=0",
        f"--secure-port={_free_port()}",
        "--authentication-kubeconfig",
        kubeconfig,
        "--authorization-kubeconfig",
        kubeconfig,
    ]
    if qps is not None:
        argv += [f"--kube-api-qps={qps}", f"--kube-api-burst={qps}"]
    return argv


@dataclass
class Run:
    """What a measured phase needs: the apiserver, the processes, where to sample them."""

    kube: KubeClient
    kubeconfig: str
    procs: Procs
    spies: Spies
    stall_s: float
    # The bus both systems' runs go through (node-sim and the relay it reads through take part in
    # kube-scheduler's run too): its CPU counts in each run's figure.
    nats_pid: int | None = None
    profile_dir: Path | None = None  # --apiserver-profile


async def measured(
    run: Run,
    name: str,
    pods: int,
    create: Any,
    *,
    group_of: dict[str, str] | None,
    size: int,
    stages: Stages | None = None,
) -> Result:
    """Create the load, wait until every pod is bound (or binding stalls), and measure it."""
    binds = Binds()
    watcher = asyncio.create_task(binds.follow(run.kube))
    groups = asyncio.create_task(stages.follow_podgroups(run.kube)) if stages is not None else None
    await asyncio.sleep(1)  # the watch is established
    pids = {**run.procs.pids(), **apiserver_pids(), "nats-server": run.nats_pid}
    meter = CpuMeter(pids)
    requests_before = await request_counts(run.kube)
    samples_before = await service_samples(run.procs.metrics_ports)
    meter.start()
    run.spies.start(run.procs.pids(), suffix=f"-{name.split()[0]}")
    profiling = None
    if run.profile_dir is not None:
        out = run.profile_dir / f"apiserver-{name.split()[0]}.pprof"
        profiling = asyncio.create_task(apiserver_profile.take(run.kube, out))
    start = time.monotonic()
    try:
        await create()
        with Progress(f"  {name}: pods bound", pods) as progress:
            await binds.wait(pods, stall_s=run.stall_s, progress=progress)
    except BaseException:
        if profiling is not None:
            profiling.cancel()  # the run failed: no profile to wait for
        raise
    seconds = (binds.last_bind or time.monotonic()) - start
    meter.stop()
    run.spies.stop()
    requests_after = await request_counts(run.kube)
    samples_after = await service_samples(run.procs.metrics_ports)
    for task in (watcher, groups):
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    whole, started = gangs_whole(binds.bound, size=size, by_label=group_of)
    timeline = backlog(binds) + ("; " + stages.report(binds) if stages is not None else "")
    profiled = await profile_summary(profiling)
    return Result(
        name,
        pods,
        len(binds.bound),
        seconds,
        whole=f"{whole}/{pods // size} whole" + ("" if started * size >= pods else f" ({started} started)"),
        cpu=meter.report(max(1, len(binds.bound))),
        requests=per_pod(requests_before, requests_after, max(1, len(binds.bound))),
        stages=timeline,
        latencies=latencies(samples_before, samples_after),
        tls=handshakes(samples_before, samples_after),
        apiserver_profile=profiled,
        bound_curve=running_curve(binds.bound_at.values(), start),
    )


async def profile_summary(profiling: asyncio.Task[Path] | None) -> str:
    """The phase's apiserver profile, once taken: its shares by kind of work, and the file."""
    if profiling is None:
        return ""
    try:
        path = await profiling
    except (KubeApiError, TemporaryError, OSError) as exc:  # refused, unreachable, or not saved
        return f"not taken ({exc})"
    shares = await apiserver_profile.summary(path)
    return f"{shares or 'no summary without Go'} of the first {apiserver_profile.PROFILE_S} s ({path})"


async def run_tephra(run: Run, nats_url: str, *, nodes: int, pods: int, gang: int) -> Result:
    start_tephra(run.procs, nats_url, run.kubeconfig, nodes=nodes, gpu="8")
    await wait_nodes(run.kube, nodes, timeout_s=max(120, nodes / 5))
    await asyncio.sleep(3)  # caches synced
    docs = [gang_job(f"j{i}", gang, gpu=False) for i in range(pods // gang)]
    stages = Stages()
    return await measured(
        run,
        "tephra (gang vcjobs)",
        pods,
        lambda: create_all(run.kube, docs, created=stages.job_created),
        group_of=None,
        size=gang,
        stages=stages,
    )


async def run_kube_scheduler(run: Run, binary: Path, *, pods: int, gang: int, qps: int | None) -> Result:
    name = "kube-scheduler" if qps is None else f"kube-scheduler-{qps}qps"
    run.procs.start(name, kube_scheduler_argv(binary, run.kubeconfig, qps))
    await asyncio.sleep(3)
    docs = [plain_pod(f"p{i}", gpu=False, group=f"g{i // gang}") for i in range(pods)]
    group_of = {d["metadata"]["name"]: d["metadata"]["labels"]["group"] for d in docs}
    label = f"kube-scheduler (plain pods, {'default 50' if qps is None else qps} qps)"
    result = await measured(run, label, pods, lambda: create_all(run.kube, docs), group_of=group_of, size=gang)
    run.procs.stop(name)
    await wipe_namespace(run.kube)
    return result


async def deadlock_case(kube: KubeClient, kubeconfig: str, binary: Path, workdir: Path, wait_s: float) -> list[str]:
    """The seeds' 4-GPU case for both systems: lines 'system: N whole, M bound'."""
    lines = []
    await wipe(kube)
    await default_queue(kube)
    with nats(workdir / "deadlock") as server:
        procs = Procs(workdir / "deadlock")
        try:
            start_tephra(procs, server.url, kubeconfig, nodes=4, gpu="1")
            await wait_nodes(kube, 4, timeout_s=120)
            await asyncio.sleep(3)
            await create_all(kube, [gang_job("job1", 4, gpu=True), gang_job("job2", 4, gpu=True)])
            await asyncio.sleep(wait_s)
            bound = await _bound(kube)
            whole, _ = gangs_whole(bound, size=4)
            lines.append(f"{'tephra':32} {whole} whole, {len(bound)} bound")
            procs.stop(*TEPHRA_WRITERS)
            await wipe_namespace(kube)
            procs.start("kube-scheduler", kube_scheduler_argv(binary, kubeconfig, None))
            await asyncio.sleep(3)
            # Interleaved creation, as two controllers would create their jobs' pods concurrently.
            docs = [plain_pod(f"job{j}-w-{i}", gpu=True, group=f"job{j}") for i in range(4) for j in (1, 2)]
            await create_all(kube, docs, parallel=2)
            await asyncio.sleep(wait_s)
            bound = await _bound(kube)
            whole, _ = gangs_whole(
                bound, size=4, by_label={d["metadata"]["name"]: d["metadata"]["labels"]["group"] for d in docs}
            )
            lines.append(f"{'kube-scheduler':32} {whole} whole, {len(bound)} bound")
        finally:
            procs.stop()
    return lines


async def _bound(kube: KubeClient) -> dict[str, str]:
    items, _ = await list_raw(kube, KINDS["Pod"], NAMESPACE)
    return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in items if (p.get("spec") or {}).get("nodeName")}


async def main_async(args: argparse.Namespace, kubeconfig: str, binary: Path, workdir: Path) -> int:
    results: list[Result] = []
    async with await KubeClient.connect(kubeconfig) as kube:
        await ensure_crds(kube)
        await wipe(kube)
        await default_queue(kube)
        procs = Procs(workdir)
        run = Run(kube, kubeconfig, procs, Spies(args.py_spy), args.stall, profile_dir=args.apiserver_profile)
        with nats(workdir / "throughput") as server:
            run.nats_pid = server.pid
            try:
                results.append(await run_tephra(run, server.url, nodes=args.nodes, pods=args.pods, gang=args.gang))
                # Same nodes for kube-scheduler: Tephra's writers stop, node-sim (and the relay it reads
                # through) keeps the nodes and runs the pods kube-scheduler binds, as it did Tephra's.
                procs.stop(*TEPHRA_WRITERS)
                await wipe_namespace(kube)
                for qps in (5000, None) if not args.skip_default_qps else (5000,):
                    results.append(await run_kube_scheduler(run, binary, pods=args.pods, gang=args.gang, qps=qps))
            finally:
                procs.stop()
        deadlock = await deadlock_case(kube, kubeconfig, binary, workdir, args.deadlock_wait)
        await wipe(kube)
    report(args, results, deadlock)
    if args.json:
        rows = [{k: v for k, v in r.__dict__.items() if k != "bound_curve"} | {"pods_per_s": r.rate} for r in results]
        args.json.write_text(json.dumps(rows, indent=2))
    title = f"bench-kube: {args.pods:,} pods (gangs of {args.gang}) on {args.nodes:,} nodes, kube-apiserver 1.20"
    files = BenchReport("kube_bench", title, params=vars(args), y_label="pods bound")
    for r in results:
        figures = {k: v for k, v in r.__dict__.items() if k not in ("system", "bound_curve")}
        files.add(r.system, figures | {"pods_per_s": r.rate}, r.bound_curve)
    print("results: " + ", ".join(str(p) for p in files.write()))
    print(f"\nlogs: {workdir}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r.bound == r.pods for r in results) else 1


def report(args: argparse.Namespace, results: list[Result], deadlock: list[str]) -> None:
    print(
        f"\nbench-kube: {args.nodes} nodes, {args.pods} pods (gangs of {args.gang}), kube-apiserver 1.20 on 127.0.0.1"
    )
    print(f"{'system':46} {'pods':>6} {'bound':>6} {'seconds':>8} {'pods/s':>8}")
    for r in results:
        print(f"{r.system:46} {r.pods:6d} {r.bound:6d} {r.seconds:8.1f} {r.rate:8.1f}")
    tephra = next((r for r in results if r.system.startswith("tephra")), None)
    peer = next((r for r in results if "5000" in r.system), None)
    if tephra and peer and peer.rate:
        print(f"\ntephra / kube-scheduler at 5000 qps, same run: {tephra.rate / peer.rate:.2f}x")
    print("\nper run, over the load phase (first create -> last bind):")
    for r in results:
        print(f"  {r.system}: {r.whole}")
        print(f"    cpu: {r.cpu}")
        print(f"    apiserver: {r.requests}")
        print(f"    stages: {r.stages}")
        if r.latencies:
            print(f"    latencies: {r.latencies}")
        if r.tls:
            print(f"    tls handshakes with the apiserver: {r.tls}")
        if r.apiserver_profile:
            print(f"    apiserver cpu by kind of work (cumulative, overlapping): {r.apiserver_profile}")
    print(
        "  (kube-apiserver 1.20's request metric calls a GET of one namespaced custom resource a LIST: during\n"
        "   the load, 'LIST podgroups' and 'LIST jobs' are reads of single objects, not lists)"
    )
    print("\ndeadlock case (4 one-GPU nodes, two 4-pod jobs): jobs placed whole / pods bound")
    for line in deadlock:
        print(line)


def prepare(args: argparse.Namespace) -> tuple[str, Path, Path]:
    """Blocking set-up before the event loop: kubeconfig path, kube-scheduler binary, log directory."""
    kubeconfig = str(Path(args.kubeconfig).resolve())
    binary = Path(args.kube_scheduler) if args.kube_scheduler else None
    if binary is None:
        out = subprocess.run(
            [str(ROOT / "scripts" / "kube" / "build.sh")],
            env={**os.environ, "KUBE_WHAT": "cmd/kube-scheduler"},
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        binary = Path(out.stdout.strip().splitlines()[-1]) / "kube-scheduler"
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="tephra-bench-kube-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "deadlock").mkdir(exist_ok=True)
    return kubeconfig, binary, workdir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.kube_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--kubeconfig", default=str(ROOT / ".kube" / "config"))
    parser.add_argument(
        "--kube-scheduler", help="kube-scheduler binary (default: build/cache it via scripts/kube/build.sh)"
    )
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--gang", type=int, default=10, help="pods per gang job")
    parser.add_argument("--stall", type=float, default=60.0, help="give up when nothing binds for this long (s)")
    parser.add_argument(
        "--deadlock-wait", type=float, default=15.0, help="seconds each scheduler gets for the deadlock case"
    )
    parser.add_argument("--skip-default-qps", action="store_true", help="only the unthrottled kube-scheduler run")
    parser.add_argument("--py-spy", type=Path, help="sample Tephra's processes with py-spy (collapsed stacks here)")
    parser.add_argument(
        "--apiserver-profile", type=Path, help="take a Go CPU profile of the kube-apiserver in each run (files here)"
    )
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    args = parser.parse_args(argv)
    kubeconfig, binary, workdir = prepare(args)
    # The kube tests (tests/kube/support.py) take this lock too: they wipe and restart the apiserver.
    with open(Path(kubeconfig).parent / "run" / "tests.lock", "w") as lock:
        print("waiting for the kube-apiserver test lock...", file=sys.stderr, flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
        sys.exit(asyncio.run(main_async(args, kubeconfig, binary, workdir)))


if __name__ == "__main__":
    main()

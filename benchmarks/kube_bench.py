"""make bench-kube: Tephra and kube-scheduler side by side on the same real kube-apiserver.

1. Tephra: every service on `--backend kube` (plus the relay and node-sim's hollow nodes); gang
   vcjobs are created on the apiserver; pods/s = pods bound / (last bind - first submit).
2. kube-scheduler (built by scripts/kube/build.sh): the same number of plain pods, same requests,
   on the same nodes (Tephra's pods removed first).
3. The seeds' deadlock case for both: 4 one-GPU nodes, two 4-pod jobs. A gang scheduler places one
   job whole; the default scheduler places pods regardless of their group (2 + 2: both jobs stuck).

Needs `make kube-up`. Figures go to stdout as one table; every process logs under --workdir.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vc_bus.server import NatsServer
from vc_kube.client import KubeApiError, KubeClient, resource_path
from vc_kube.crds import ensure_crds
from vc_kube.store import KubeStore
from vc_kube.watching import list_raw
from vc_proto.codec import from_dict
from vc_proto.kinds import KINDS
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
NAMESPACE = "bench"


@dataclass
class Result:
    scheduler: str
    pods: int
    bound: int
    seconds: float

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

    def start(self, name: str, argv: list[str]) -> None:
        log = open(self.workdir / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

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


@contextlib.contextmanager
def nats(workdir: Path) -> Iterator[NatsServer]:
    server = NatsServer(workdir / "nats")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def wipe(kube: KubeClient, *, parallel: int = 32) -> None:
    """Delete every Tephra-kind object outside the system namespaces (nodes included), in parallel."""
    gate = asyncio.Semaphore(parallel)

    async def delete(path: str) -> None:
        async with gate:
            with contextlib.suppress(KubeApiError):
                await kube.request(
                    "DELETE", path, body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
                )

    for row in KINDS.values():
        items, _ = await list_raw(kube, row, None)
        paths = []
        for raw in items:
            meta = raw["metadata"]
            ns, name = meta.get("namespace"), meta["name"]
            if ns in ("kube-system", "kube-public", "kube-node-lease") or (
                row.kind == "Service" and name == "kubernetes"
            ):
                continue
            if row.kind == "PriorityClass" and name.startswith("system-"):
                continue
            paths.append(resource_path(row, ns, name))
        await asyncio.gather(*(delete(p) for p in paths))


async def count_bound(kube: KubeClient, namespace: str) -> tuple[int, int]:
    items, _ = await list_raw(kube, KINDS["Pod"], namespace)
    return len(items), sum(1 for p in items if (p.get("spec") or {}).get("nodeName"))


async def wait_bound(kube: KubeClient, namespace: str, want: int, *, start: float, stall_s: float) -> tuple[int, float]:
    """Poll until `want` pods are bound or nothing new binds for `stall_s`; (bound, seconds to last bind)."""
    last_bound, last_change = 0, time.monotonic()
    while True:
        _, bound = await count_bound(kube, namespace)
        if bound != last_bound:
            last_bound, last_change = bound, time.monotonic()
        if bound >= want or time.monotonic() - last_change > stall_s:
            return bound, last_change - start
        await asyncio.sleep(0.5)


async def wait_nodes(kube: KubeClient, count: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        items, _ = await list_raw(kube, KINDS["Node"], None)
        ready = [n for n in items if not (n.get("spec") or {}).get("taints")]
        if len(ready) >= count:
            return
        await asyncio.sleep(1)
    raise TimeoutError(f"{count} nodes not Ready after {timeout_s}s")


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
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"group": group}},
        "spec": {
            "schedulerName": "default-scheduler",
            "containers": [{"name": "w", "image": "busybox", "resources": {"requests": requests, "limits": limits}}],
        },
    }


async def create_all(kube: KubeClient, docs: list[dict[str, Any]], *, parallel: int = 32) -> None:
    store = KubeStore(kube)
    gate = asyncio.Semaphore(parallel)

    async def create(doc: dict[str, Any]) -> None:
        async with gate:
            await store.create(from_dict(doc))

    await asyncio.gather(*(create(d) for d in docs))


async def default_queue(kube: KubeClient) -> None:
    store = KubeStore(kube)
    for name, reclaimable in (("root", False), ("default", True)):
        spec = QueueSpec(weight=1, reclaimable=reclaimable, parent=None if name == "root" else "root")
        with contextlib.suppress(Exception):
            await store.create(
                Queue(
                    api_version=SCHEDULING_V1BETA1,
                    metadata=ObjectMeta(name=name),
                    spec=spec,
                    status=QueueStatus(state="Open"),
                )
            )


def start_tephra(procs: Procs, nats_url: str, kubeconfig: str, *, nodes: int, gpu: str) -> None:
    common = ["--nats", nats_url, "--backend", "kube", "--kubeconfig", kubeconfig, "--log-level", "warning"]
    procs.start("kube-relay", [str(BIN / "vc-kube-relay"), *common])
    for service, extra in (
        ("admission", []),
        ("queue-controller", []),
        ("podgroup-controller", []),
        ("job-controller", []),
        ("scheduler", ["--schedule-period", "0.5"]),
        (
            "node-sim",
            ["--nodes", str(nodes), "--node-gpu", gpu, "--node-prefix", "bench-", "--heartbeat-period", "600"],
        ),
    ):
        procs.start(service, [str(BIN / f"vc-{service}"), *common, *extra])


async def run_tephra(
    kube: KubeClient,
    procs: Procs,
    nats_url: str,
    kubeconfig: str,
    *,
    nodes: int,
    pods: int,
    gang: int,
    gpu: bool,
    stall_s: float,
) -> Result:
    start_tephra(procs, nats_url, kubeconfig, nodes=nodes, gpu="1" if gpu else "8")
    await wait_nodes(kube, nodes, timeout_s=max(120, nodes / 5))
    await asyncio.sleep(3)  # caches synced
    docs = [gang_job(f"j{i}", gang, gpu=gpu) for i in range(pods // gang)]
    start = time.monotonic()
    await create_all(kube, docs)
    bound, seconds = await wait_bound(kube, NAMESPACE, pods, start=start, stall_s=stall_s)
    return Result("tephra (gang vcjobs)", pods, bound, seconds)


async def run_kube_scheduler(
    kube: KubeClient, procs: Procs, kubeconfig: str, binary: Path, *, pods: int, gpu: bool, group: int, stall_s: float
) -> Result:
    procs.start(
        "kube-scheduler",
        [
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
        ],
    )
    await asyncio.sleep(3)
    docs = [plain_pod(f"p{i}", gpu=gpu, group=f"g{i // group}") for i in range(pods)]
    start = time.monotonic()
    await create_all(kube, docs)
    bound, seconds = await wait_bound(kube, NAMESPACE, pods, start=start, stall_s=stall_s)
    procs.stop("kube-scheduler")
    return Result("kube-scheduler (plain pods)", pods, bound, seconds)


async def deadlock_groups_whole(kube: KubeClient, *, by_label: bool) -> tuple[int, int]:
    """(groups with all 4 pods bound, pods bound) in the bench namespace."""
    items, _ = await list_raw(kube, KINDS["Pod"], NAMESPACE)
    groups: dict[str, int] = {}
    bound = 0
    for pod in items:
        if not (pod.get("spec") or {}).get("nodeName"):
            continue
        bound += 1
        meta = pod["metadata"]
        group = (meta.get("labels") or {}).get("group") if by_label else meta["name"].rsplit("-", 2)[0]
        groups[str(group)] = groups.get(str(group), 0) + 1
    return sum(1 for c in groups.values() if c == 4), bound


def prepare(args: argparse.Namespace) -> tuple[str, Path, Path]:
    """Blocking set-up before the event loop: kubeconfig path, kube-scheduler binary, log directory."""
    kubeconfig = str(Path(args.kubeconfig).resolve())
    binary = Path(args.kube_scheduler) if args.kube_scheduler else None
    if binary is None:
        out = subprocess.run(
            [str(ROOT / "scripts" / "kube" / "build.sh")],
            env={**os.environ, "KUBE_WHAT": "cmd/kube-scheduler"},
            check=True,
            capture_output=True,
            text=True,
        )
        binary = Path(out.stdout.strip().splitlines()[-1]) / "kube-scheduler"
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="tephra-bench-kube-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "deadlock").mkdir(exist_ok=True)
    return kubeconfig, binary, workdir


async def main_async(args: argparse.Namespace, kubeconfig: str, binary: Path, workdir: Path) -> int:
    results: list[Result] = []
    deadlock: list[tuple[str, int, int]] = []
    async with await KubeClient.connect(kubeconfig) as kube:
        await ensure_crds(kube)
        # --- throughput -------------------------------------------------------------------------
        await wipe(kube)
        await default_queue(kube)
        procs = Procs(workdir)
        with nats(workdir / "throughput") as server:
            try:
                results.append(
                    await run_tephra(
                        kube,
                        procs,
                        server.url,
                        kubeconfig,
                        nodes=args.nodes,
                        pods=args.pods,
                        gang=args.gang,
                        gpu=False,
                        stall_s=args.stall,
                    )
                )
                procs.stop("scheduler", "job-controller", "podgroup-controller", "queue-controller", "admission")
                # Same nodes for kube-scheduler: drop Tephra's jobs and pods, keep node-sim's nodes.
                await wipe_namespace(kube)
                results.append(
                    await run_kube_scheduler(
                        kube, procs, kubeconfig, binary, pods=args.pods, gpu=False, group=args.gang, stall_s=args.stall
                    )
                )
            finally:
                procs.stop()
        # --- the deadlock case ------------------------------------------------------------------
        await wipe(kube)
        await default_queue(kube)
        with nats(workdir / "deadlock") as server:
            procs = Procs(workdir / "deadlock")
            try:
                start_tephra(procs, server.url, kubeconfig, nodes=4, gpu="1")
                await wait_nodes(kube, 4, timeout_s=120)
                await asyncio.sleep(3)
                await create_all(kube, [gang_job("job1", 4, gpu=True), gang_job("job2", 4, gpu=True)])
                await asyncio.sleep(args.deadlock_wait)
                deadlock.append(("tephra", *await deadlock_groups_whole(kube, by_label=False)))
                procs.stop("scheduler", "job-controller", "podgroup-controller", "queue-controller", "admission")
                await wipe_namespace(kube)
                procs.start(
                    "kube-scheduler",
                    [
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
                    ],
                )
                await asyncio.sleep(3)
                # Interleaved creation, as two controllers would create their jobs' pods concurrently.
                docs = [plain_pod(f"job{j}-w-{i}", gpu=True, group=f"job{j}") for i in range(4) for j in (1, 2)]
                await create_all(kube, docs, parallel=2)
                await asyncio.sleep(args.deadlock_wait)
                deadlock.append(("kube-scheduler", *await deadlock_groups_whole(kube, by_label=True)))
            finally:
                procs.stop()
        await wipe(kube)
    print(
        f"\nbench-kube: {args.nodes} nodes, {args.pods} pods (gangs of {args.gang}), kube-apiserver 1.20 on 127.0.0.1"
    )
    print(f"{'scheduler':32} {'pods':>6} {'bound':>6} {'seconds':>8} {'pods/s':>8}")
    for r in results:
        print(f"{r.scheduler:32} {r.pods:6d} {r.bound:6d} {r.seconds:8.1f} {r.rate:8.1f}")
    print("\ndeadlock case (4 one-GPU nodes, two 4-pod jobs): jobs placed whole / pods bound")
    for name, whole, bound in deadlock:
        print(f"{name:32} {whole} whole, {bound} bound")
    print(f"\nlogs: {workdir}")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


async def wipe_namespace(kube: KubeClient) -> None:
    """Jobs, podgroups and pods of the bench namespace (nodes stay)."""
    gate = asyncio.Semaphore(32)

    async def delete(path: str) -> None:
        async with gate:
            with contextlib.suppress(KubeApiError):
                await kube.request(
                    "DELETE", path, body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
                )

    for kind in ("Job", "PodGroup", "Pod", "Service", "ConfigMap", "Secret", "NetworkPolicy"):
        row = KINDS[kind]
        items, _ = await list_raw(kube, row, NAMESPACE)
        await asyncio.gather(*(delete(resource_path(row, NAMESPACE, i["metadata"]["name"])) for i in items))
    for _ in range(600):  # pods with gracePeriodSeconds 0 go at once; wait until the list is empty
        if not (await count_bound(kube, NAMESPACE))[0]:
            return
        await asyncio.sleep(0.5)
    raise TimeoutError("bench pods not deleted after 5 minutes")


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
        "--deadlock-wait", type=float, default=15.0, help="seconds to let each scheduler work on the deadlock case"
    )
    parser.add_argument("--workdir")
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    args = parser.parse_args(argv)
    kubeconfig, binary, workdir = prepare(args)
    # The kube tests (tests/kube/support.py) take this lock too: they wipe and restart the apiserver.
    with open(Path(kubeconfig).parent / "run" / "tests.lock", "w") as lock:
        print("waiting for the kube-apiserver test lock...", file=sys.stderr)
        fcntl.flock(lock, fcntl.LOCK_EX)
        sys.exit(asyncio.run(main_async(args, kubeconfig, binary, workdir)))


if __name__ == "__main__":
    main()

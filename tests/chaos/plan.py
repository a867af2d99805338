"""PURE: a seeded chaos schedule. The same (seed, index, options) always gives the same schedule: the
NATS topology, the service instances, the queues and nodes, every job and its submit time, and every
fault with its time, target and duration. Only the system's own timing differs between runs.

Coverage is by rotation, not luck: over consecutive schedules the topology cycles through one server
with fsync always, one with the default fsync, and a 3-server R3 cluster; every service kind is
killed and paused within 7 schedules; the proxy faults cycle through delay, drop and partition.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

SERVICE_KINDS = (
    "admission",
    "job-controller",
    "queue-controller",
    "podgroup-controller",
    "gc",
    "scheduler",
    "node-sim",
)
# Kinds run as 2-3 active-active instances; admission runs 2 (a queue group), node-sim 1.
REPLICATED = ("job-controller", "queue-controller", "podgroup-controller", "gc", "scheduler")
TOPOLOGIES = ("single-always", "single-default", "cluster-r3")
PROXY_FAULTS = ("proxy-delay", "proxy-drop", "proxy-partition")

FaultKind = Literal[
    "kill",
    "stop",
    "nats-kill",
    "unsynced-loss",
    "server-kill",
    "leader-kill",
    "disk-stall",
    "node-flap",
    "proxy-delay",
    "proxy-drop",
    "proxy-partition",
    # kube mode (kube_plan.py)
    "apiserver-restart",
    "etcd-restart",
    "gone-relist",
]


@dataclass(frozen=True, slots=True)
class Options:
    load_s: float = 30.0  # how long jobs are submitted (faults happen inside this window)
    jobs_per_s: float = 2.5
    # Jobs arrive in bursts (a user submitting a batch): bursts of 1..2*burst-1 jobs, same average rate.
    # Bursts make scheduler instances race for the same queue and nodes at the same moment.
    burst: int = 4
    nodes: int = 100  # the node flap storm makes up to 100 of them NotReady
    node_cpu: str = "1"
    node_memory: str = "4Gi"
    node_pods: str = "4"
    flap_nodes: int = 100


@dataclass(frozen=True, slots=True)
class Fault:
    at_s: float  # from the start of the load
    kind: FaultKind
    target: str = ""  # an instance ("scheduler-1"), a server role ("follower", "leader"), or ""
    duration_s: float = 0.0
    amount: float = 0.0  # proxy-delay: seconds of latency each way

    @property
    def global_(self) -> bool:
        """Acts on the whole system (NATS, the disk, every node): at most one such fault at a time."""
        return self.kind not in ("kill", "stop", *PROXY_FAULTS)

    def label(self) -> str:
        target = f" {self.target}" if self.target else ""
        length = f" {self.duration_s:.0f}s" if self.duration_s else ""
        amount = f" {self.amount * 1000:.0f}ms" if self.amount else ""
        return f"{self.kind}{target}{length}{amount}@{self.at_s:.0f}s"


@dataclass(frozen=True, slots=True)
class QueuePlan:
    name: str
    cpu: str
    memory: str


@dataclass(frozen=True, slots=True)
class JobPlan:
    name: str
    queue: str
    submit_at_s: float
    replicas: int
    min_available: int
    cpu: str
    memory: str
    duration_s: float
    exit_code: int = 0
    ttl_s: int | None = None  # ttlSecondsAfterFinished: gc deletes the finished job


@dataclass(frozen=True, slots=True)
class Schedule:
    seed: int
    index: int
    topology: str
    instances: tuple[tuple[str, int], ...]  # (kind, count)
    proxied: tuple[str, ...]  # instances that reach NATS through a fault-injecting proxy
    queues: tuple[QueuePlan, ...]
    jobs: tuple[JobPlan, ...]
    faults: tuple[Fault, ...]
    options: Options

    @property
    def servers(self) -> int:
        return 3 if self.topology == "cluster-r3" else 1

    @property
    def sync(self) -> Literal["always", "default"]:
        return "default" if self.topology == "single-default" else "always"

    def instance_names(self) -> list[str]:
        return [f"{kind}-{i}" for kind, count in self.instances for i in range(count)]

    def longest_fault_s(self) -> float:
        return max((f.duration_s for f in self.faults), default=0.0)


def make_schedule(seed: int, index: int, options: Options = Options(), *, faults: bool = True) -> Schedule:
    """The schedule `index` of `seed`; without `faults`, the same load and system with no fault at all."""
    rng = random.Random(f"tephra-chaos/{seed}/{index}")
    topology = TOPOLOGIES[(seed + index) % len(TOPOLOGIES)]
    instances = tuple((kind, _count(kind, rng)) for kind in SERVICE_KINDS)
    names = [f"{kind}-{i}" for kind, count in instances for i in range(count)]
    other = f"{rng.choice(REPLICATED[:-1])}-{rng.randrange(2)}"
    proxied = tuple(sorted({"scheduler-0", "scheduler-1", other}))
    queues = tuple(QueuePlan(f"q{i}", cpu, "64Gi") for i, cpu in enumerate(("3", "4", "6", "8")))
    jobs = tuple(_jobs(rng, seed, index, queues, options))
    planned = _faults(rng, index, topology, names, proxied, options)
    return Schedule(seed, index, topology, instances, proxied, queues, jobs, planned if faults else (), options)


def _count(kind: str, rng: random.Random) -> int:
    if kind == "node-sim":
        return 1
    if kind == "admission":
        return 2
    return rng.choice((2, 3))


def _jobs(rng: random.Random, seed: int, index: int, queues: tuple[QueuePlan, ...], options: Options) -> list[JobPlan]:
    jobs: list[JobPlan] = []
    bursts_per_s = options.jobs_per_s / options.burst
    at, left = rng.expovariate(bursts_per_s), rng.randint(1, 2 * options.burst - 1)
    while at < options.load_s:
        queue = rng.choice(queues)
        cpu = rng.choice(("500m", "1"))
        room = int(float(queue.cpu) / (0.5 if cpu == "500m" else 1.0))
        replicas = rng.randint(1, min(4, room))  # the whole job fits its queue: it can always finish
        minimum = replicas - 1 if replicas > 1 and rng.random() < 0.2 else replicas
        jobs.append(
            JobPlan(
                name=f"c{seed}-{index}-{len(jobs):04d}",
                queue=queue.name,
                submit_at_s=round(at, 3),
                replicas=replicas,
                min_available=minimum,
                cpu=cpu,
                memory=rng.choice(("256Mi", "512Mi")),
                duration_s=round(rng.uniform(1.5, 6.0), 1),
                exit_code=1 if rng.random() < 0.04 else 0,
                ttl_s=5 if rng.random() < 0.3 else None,
            )
        )
        left -= 1
        if left == 0:
            at, left = at + rng.expovariate(bursts_per_s), rng.randint(1, 2 * options.burst - 1)
    return jobs


def _faults(
    rng: random.Random, index: int, topology: str, names: list[str], proxied: tuple[str, ...], options: Options
) -> tuple[Fault, ...]:
    window = (3.0, max(6.0, options.load_s - 8.0))
    killed = SERVICE_KINDS[index % len(SERVICE_KINDS)]
    paused = SERVICE_KINDS[(index + 3) % len(SERVICE_KINDS)]
    faults = [
        Fault(_at(rng, window), "kill", _instance(rng, names, killed)),
        Fault(_at(rng, window), "stop", _instance(rng, names, paused), round(rng.uniform(2.0, 12.0), 1)),
    ]
    # A slow link under one scheduler, every time: its view (caches, ledger copy) lags its peers', so
    # its placements race theirs; only the ledger's compare-and-set keeps them apart.
    slow = round(rng.uniform(5.0, 12.0), 1)
    faults.append(
        Fault(
            _at(rng, (window[0], window[1] - slow)), "proxy-delay", "scheduler-0", slow, round(rng.uniform(0.1, 0.3), 2)
        )
    )
    proxy = PROXY_FAULTS[index % len(PROXY_FAULTS)]
    target = rng.choice([p for p in proxied if p != "scheduler-0"])
    faults.append(
        Fault(
            _at(rng, window),
            proxy,
            target,
            round(rng.uniform(2.0, 8.0), 1),
            round(rng.uniform(0.05, 0.4), 2) if proxy == "proxy-delay" else 0.0,
        )
    )
    global_faults: list[tuple[FaultKind, str, float]] = []
    if topology == "cluster-r3":
        global_faults += [
            ("server-kill", "follower", rng.uniform(3.0, 8.0)),
            ("leader-kill", "leader", rng.uniform(3.0, 8.0)),
        ]
    else:
        global_faults.append(("nats-kill", "", rng.uniform(1.0, 4.0)))
        if topology == "single-default":
            global_faults.append(("unsynced-loss", "", rng.uniform(2.0, 6.0)))
        elif index % 2 == 0:
            global_faults.append(("disk-stall", "", rng.uniform(2.0, 6.0)))
    if index % 3 == 2:
        global_faults.append(("node-flap", "", rng.uniform(2.0, 5.0)))
    # One global fault at a time, in order: each gets its own slice of the window.
    span = (window[1] - window[0]) / len(global_faults)
    for i, (kind, target, duration) in enumerate(global_faults):
        start, length = window[0] + i * span, round(min(duration, span * 0.8), 1)
        at = rng.uniform(start, start + span - length) // 0.1 * 0.1
        faults.append(Fault(round(at, 1), kind, target, length))
    return tuple(sorted(faults, key=lambda f: f.at_s))


def _at(rng: random.Random, window: tuple[float, float]) -> float:
    return round(rng.uniform(*window), 1)


def _instance(rng: random.Random, names: list[str], kind: str) -> str:
    return rng.choice([n for n in names if n.rsplit("-", 1)[0] == kind])

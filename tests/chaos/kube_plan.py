"""PURE: a seeded kube-mode chaos schedule: Tephra's services on `--backend kube` against a private
kube-apiserver and etcd, the relay mirroring them into NATS (one server, fsync always).

Same load as the embedded mode (plan.py: gang jobs in four capped queues, same generator), and in
every schedule, each in its own turn:
- apiserver-restart: kill -9 of the kube-apiserver, down `duration_s`, started again;
- etcd-restart: kill -9 of etcd, down `duration_s`, started again on its data dir;
- gone-relist: the relay cut off from the apiserver for `duration_s` while the others keep writing,
  and the apiserver restarted in the middle (its watch cache starts over at the current revision),
  so the relay's watches resume from a resourceVersion that is gone: 410, re-list;
plus kill -9 of the relay, and kill -9 and SIGSTOP/SIGCONT of a service kind rotating over the
schedules (the relay included): every kind is killed and paused within 8 schedules.
"""

from __future__ import annotations

import random

from tests.chaos.plan import SERVICE_KINDS, Fault, FaultKind, Options, QueuePlan, Schedule, _at, _instance, _jobs

RELAY = "kube-relay"
KUBE_KINDS = (*SERVICE_KINDS, RELAY)
TOPOLOGY = "kube"
KUBE_FAULTS: tuple[FaultKind, ...] = ("apiserver-restart", "etcd-restart", "gone-relist")
# Fewer nodes than the embedded mode: every node-sim heartbeat is an apiserver write here. Still more
# room than the queues' caps (21 cpu), so the queues are what runs full.
KUBE_OPTIONS = Options(nodes=32, flap_nodes=0)


def instance_counts(kind: str) -> int:
    """Two of each controller and the scheduler (active-active), two admission, one node-sim, one relay."""
    return 1 if kind in ("node-sim", RELAY) else 2


def make_kube_schedule(seed: int, index: int, options: Options = KUBE_OPTIONS, *, faults: bool = True) -> Schedule:
    rng = random.Random(f"tephra-chaos-kube/{seed}/{index}")
    instances = tuple((kind, instance_counts(kind)) for kind in KUBE_KINDS)
    names = [f"{kind}-{i}" for kind, count in instances for i in range(count)]
    queues = tuple(QueuePlan(f"q{i}", cpu, "64Gi") for i, cpu in enumerate(("3", "4", "6", "8")))
    jobs = tuple(_jobs(rng, seed, index, queues, options))
    planned = _faults(rng, index, names, options) if faults else ()
    return Schedule(seed, index, TOPOLOGY, instances, (), queues, jobs, planned, options)


def _faults(rng: random.Random, index: int, names: list[str], options: Options) -> tuple[Fault, ...]:
    window = (3.0, max(9.0, options.load_s - 6.0))
    killed = KUBE_KINDS[index % len(KUBE_KINDS)]
    paused = KUBE_KINDS[(index + 3) % len(KUBE_KINDS)]
    faults = [
        Fault(_at(rng, window), "kill", f"{RELAY}-0"),
        Fault(_at(rng, window), "stop", _instance(rng, names, paused), round(rng.uniform(2.0, 8.0), 1)),
    ]
    if killed != RELAY:
        faults.append(Fault(_at(rng, window), "kill", _instance(rng, names, killed)))
    # One whole-system fault at a time, each in its own slice of the window, in a seeded order.
    order = list(KUBE_FAULTS)
    rng.shuffle(order)
    durations = {"apiserver-restart": (1.0, 4.0), "etcd-restart": (1.0, 4.0), "gone-relist": (3.0, 6.0)}
    span = (window[1] - window[0]) / len(order)
    for i, kind in enumerate(order):
        start = window[0] + i * span
        length = round(min(rng.uniform(*durations[kind]), span * 0.8), 1)
        at = rng.uniform(start, start + span - length) // 0.1 * 0.1
        faults.append(Fault(round(at, 1), kind, "", length))
    return tuple(sorted(faults, key=lambda f: f.at_s))

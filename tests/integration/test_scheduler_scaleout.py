"""Three scheduler instances active-active under a steady stream of gang jobs (every service a real
process, real NATS): one is killed -9 mid-run, another is paused past its lease. A sampler reads the
store continuously and checks the scheduling invariants at every moment:

- no node's allocatable is exceeded (cpu and pod slots);
- no queue's capability is exceeded;
- no pod is bound twice (a bound pod never moves to another node);
- no gang stays partially bound below minMember (a gang being committed, or completed by a new owner
  after a crash, may be partial for a few seconds);
- every job eventually completes;
- the paused instance, once awake, writes nothing under its old epoch.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client

from tests.support.services import ServiceProcess
from tests.support.system import System, start_system
from tests.support.waiting import eventually
from vc_bus.connection import connect
from vc_bus.store import NatsStore
from vc_cli.client import Tephra
from vc_core.quantity import parse_quantity
from vc_proto import api
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.scheduling import PodGroup, Queue
from vc_runtime.membership import Membership
from vc_runtime.sharding import SoleOwner
from vc_scheduler import ledger as pure
from vc_scheduler.binder import BOUND_BY, GangBinder
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger_kv import Ledger, node_key
from vc_scheduler.solo import SoloLedger
from vc_scheduling.framework.decisions import Bind

pytestmark = [pytest.mark.nats, pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]

NODES, NODE_CPU = 6, 8
CAPPED_QUEUE, CAPPED_CPU = "capped", 10
GANG = 4
LEASE_TTL = "2"
SCHEDULERS = ("scheduler", "scheduler-b", "scheduler-c")
STREAM_S = 36.0
KILL_AT_S, PAUSE_AT_S, PAUSE_FOR_S = 10.0, 20.0, 5.0
PARTIAL_TOLERANCE_S = 12.0  # a crashed owner's half-bound gang waits for its lease and the reclaim grace


def gang_job(name: str, queue: str, duration_s: float) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": {"sim.tephra.dev/duration": f"{duration_s}s"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
            ],
        },
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": GANG,
            "queue": queue,
            "tasks": [{"name": "worker", "replicas": GANG, "template": template}],
        },
    }


@dataclass
class Invariants:
    violations: list[str] = field(default_factory=list)
    first_node: dict[str, str] = field(default_factory=dict)  # pod uid -> node it was first seen bound to
    first_seen_bound_at: dict[str, float] = field(default_factory=dict)  # pod uid -> when first seen bound
    bound_by: dict[str, str] = field(default_factory=dict)  # pod uid -> "<instance>/<epoch>"
    partial_since: dict[str, float] = field(default_factory=dict)
    samples: int = 0
    max_node_cpu: Fraction = Fraction(0)
    max_queue_cpu: Fraction = Fraction(0)

    def check(self, pods: list[Pod], groups: list[PodGroup], now: float) -> None:
        self.samples += 1
        queue_of = {f"{g.metadata.namespace}/{g.metadata.name}": g.spec.queue if g.spec else "" for g in groups}
        min_member = {
            f"{g.metadata.namespace}/{g.metadata.name}": (g.spec.min_member or 0) if g.spec else 0 for g in groups
        }
        node_cpu: dict[str, Fraction] = defaultdict(Fraction)
        node_pods: Counter[str] = Counter()
        queue_cpu: dict[str, Fraction] = defaultdict(Fraction)
        gang_bound: Counter[str] = Counter()
        gang_finished: set[str] = set()
        for pod in pods:
            uid, node = pod.metadata.uid or "", pod.spec.node_name if pod.spec else None
            phase = pod.status.phase if pod.status else "Pending"
            group = (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name")
            gkey = f"{pod.metadata.namespace}/{group}"
            if phase in ("Succeeded", "Failed") or pod.metadata.deletion_timestamp:
                gang_finished.add(gkey)
            if not node:
                continue
            if self.first_node.setdefault(uid, node) != node:
                self.violations.append(f"pod {pod.metadata.name} bound twice: {self.first_node[uid]} then {node}")
            self.first_seen_bound_at.setdefault(uid, now)
            self.bound_by.setdefault(uid, (pod.metadata.annotations or {}).get(BOUND_BY, ""))
            gang_bound[gkey] += 1
            if phase in ("Succeeded", "Failed"):
                continue
            cpu = (
                sum(
                    (
                        parse_quantity((c.resources.requests or {}).get("cpu", "0"))
                        for c in pod.spec.containers
                        if c.resources
                    ),
                    Fraction(0),
                )
                if pod.spec
                else Fraction(0)
            )
            node_cpu[node] += cpu
            node_pods[node] += 1
            queue_cpu[queue_of.get(gkey, "")] += cpu
        for node, cpu in node_cpu.items():
            self.max_node_cpu = max(self.max_node_cpu, cpu)
            if cpu > NODE_CPU:
                self.violations.append(f"node {node} overcommitted: cpu {cpu} > {NODE_CPU}")
        self.max_queue_cpu = max(self.max_queue_cpu, queue_cpu.get(CAPPED_QUEUE, Fraction(0)))
        if queue_cpu.get(CAPPED_QUEUE, 0) > CAPPED_CPU:
            self.violations.append(
                f"queue {CAPPED_QUEUE} over capability: cpu {queue_cpu[CAPPED_QUEUE]} > {CAPPED_CPU}"
            )
        for gkey, bound in gang_bound.items():
            partial = 0 < bound < min_member.get(gkey, 0) and gkey not in gang_finished
            if not partial:
                self.partial_since.pop(gkey, None)
                continue
            since = self.partial_since.setdefault(gkey, now)
            if now - since > PARTIAL_TOLERANCE_S:
                self.violations.append(
                    f"gang {gkey} partially bound ({bound}/{min_member[gkey]}) for {now - since:.1f}s"
                )
                self.partial_since[gkey] = now  # report once per window


async def sample(url: str, inv: Invariants, stop: asyncio.Event) -> None:
    async with connect(url, name="sampler") as nc:
        store = NatsStore(nc)
        while not stop.is_set():
            pods, _ = await store.list(Pod)
            groups, _ = await store.list(PodGroup)
            inv.check(pods, groups, time.monotonic())
            await asyncio.sleep(0.1)


async def lease_epoch(url: str, instance: str) -> int:
    async with connect(url, name="lease-reader") as nc:
        kv = await nc.jetstream().key_value("vc-leases")
        entry = await kv.get(f"scheduler.{instance}")
        return int(json.loads(entry.value or b"{}")["epoch"])


def scrape(service: ServiceProcess) -> dict[str, float]:
    """Sum of each tephra_scheduler_* counter over its labels."""
    out: dict[str, float] = defaultdict(float)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{service.health_port}/metrics", timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return {}
    for line in text.splitlines():
        m = re.match(r"^(tephra_scheduler_\w+?)(?:_total)?(\{[^}]*\})? ([0-9.e+-]+)$", line)
        if m and not m.group(1).endswith("_created"):
            labels = m.group(2) or ""
            outcome = re.search(r'outcome="(\w+)"', labels)
            name = m.group(1) + (f":{outcome.group(1)}" if outcome else "")
            out[name] += float(m.group(3))
    return out


@pytest.fixture
async def system(tmp_path: Path) -> AsyncIterator[System]:
    extra = {"node-sim": ["--node-cpu", str(NODE_CPU)], "scheduler": ["--lease-ttl", LEASE_TTL]}
    running = await start_system(tmp_path, nodes=NODES, extra=extra)
    try:
        for name in SCHEDULERS[1:]:
            service = running.service(
                name, "vc-scheduler", ["--schedule-period", "0.5", "--lease-ttl", LEASE_TTL]
            ).start()
            running.services[name] = service
        for name in SCHEDULERS[1:]:
            await running.services[name].wait_ready(timeout=60)
        yield running
    finally:
        running.stop()


async def test_three_schedulers_keep_every_invariant_through_a_crash_and_a_pause(system: System) -> None:
    inv = Invariants()
    stop = asyncio.Event()
    async with connect(system.url, name="submitter") as nc:
        tephra = Tephra(nc)
        await tephra.submit(
            "create",
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": CAPPED_QUEUE},
                "spec": {"weight": 1, "capability": {"cpu": str(CAPPED_CPU)}},
            },
        )
        sampler = asyncio.create_task(sample(system.url, inv, stop))
        killed, paused = system.services[SCHEDULERS[0]], system.services[SCHEDULERS[1]]
        paused_epoch, resumed_at = 0, float("inf")
        names: list[str] = []
        started = time.monotonic()
        i = 0
        while (elapsed := time.monotonic() - started) < STREAM_S:
            name = f"gang-{i:04d}"
            queue = CAPPED_QUEUE if i % 6 == 0 else "default"
            # About as much work as the nodes hold: instances compete for the last free slots.
            await tephra.submit(api.Create, gang_job(name, queue, duration_s=2.0 + (i % 4) * 0.5), namespace="default")
            names.append(name)
            i += 1
            if killed.proc and killed.proc.poll() is None and elapsed >= KILL_AT_S:
                killed.kill()  # kill -9 mid-run: its PodGroups move to the others
            if paused_epoch == 0 and elapsed >= PAUSE_AT_S:
                paused_epoch = await lease_epoch(system.url, SCHEDULERS[1])
                paused.pause()
                await asyncio.sleep(PAUSE_FOR_S)  # past its 2 s lease: the last live instance takes everything
                paused.resume()
                resumed_at = time.monotonic()
            await asyncio.sleep(0.15)

        async def all_completed() -> list[str]:
            jobs, _ = await tephra.store.list(Job, "default")
            phases = {j.metadata.name: (j.status.state.phase if j.status and j.status.state else "") for j in jobs}
            return [n for n in names if phases.get(n) != "Completed"]

        deadline = time.monotonic() + 60
        while (left := await all_completed()) and time.monotonic() < deadline:  # noqa: ASYNC110 (polls the store)
            await asyncio.sleep(0.5)
        stop.set()
        await sampler

    stats = {name: scrape(system.services[name]) for name in SCHEDULERS[1:]}
    print(f"\njobs={len(names)} samples={inv.samples} max node cpu={inv.max_node_cpu}", end=" ")
    print(f"max capped queue cpu={inv.max_queue_cpu}")
    for name, s in stats.items():
        print(name, {k: v for k, v in sorted(s.items()) if v})
    by_instance = Counter(b.split("/")[0] for b in inv.bound_by.values())
    print("binds by instance:", dict(by_instance))

    assert not left, f"{len(left)} jobs never completed, e.g. {left[:5]}\n{system.logs()}"
    assert not inv.violations, "\n".join(inv.violations[:20])
    # Every instance did some of the work (the crashed one before its crash, the paused one after it woke).
    assert set(by_instance) >= set(SCHEDULERS), by_instance
    # The paused instance wrote nothing under its old epoch once it woke (a sample sees each bind first).
    stale = [
        uid
        for uid, by in inv.bound_by.items()
        if by == f"{SCHEDULERS[1]}/{paused_epoch}" and inv.first_seen_bound_at[uid] > resumed_at + 0.5
    ]
    assert not stale, f"{len(stale)} binds by {SCHEDULERS[1]} under its old epoch {paused_epoch} after it woke"
    # ... and re-joined under a new epoch and took its share back.
    rejoined = [
        by
        for by in inv.bound_by.values()
        if by.startswith(f"{SCHEDULERS[1]}/") and by != f"{SCHEDULERS[1]}/{paused_epoch}"
    ]
    assert rejoined, f"{SCHEDULERS[1]} bound nothing after it woke\n{paused.log_text()[-3000:]}"
    assert inv.samples > 50


async def test_with_three_instances_each_queue_reports_the_whole_clusters_allocation(system: System) -> None:
    """Each instance plans over its share and sees the rest of the cluster as sums; the instance owning a
    queue writes its `status.allocated`, which must be the whole cluster's (no instance's share written
    over another's): what `vcctl queue get` and the dashboard show."""
    queues = {"left": 2, "right": 1}
    async with connect(system.url, name="submitter") as nc:
        tephra = Tephra(nc)
        for queue, weight in queues.items():
            queue_obj = {"metadata": {"name": queue}, "spec": {"weight": weight}}
            await tephra.submit(
                api.Create, {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", **queue_obj}
            )
        for i in range(8):  # 8 gangs of 4 one-cpu pods that run until deleted: 32 of the nodes' 48 cpu
            job = gang_job(f"steady-{i}", ("left", "right")[i % 2], duration_s=0)
            del job["spec"]["tasks"][0]["template"]["metadata"]["annotations"]
            await tephra.submit(api.Create, job, namespace="default")

        async def figures() -> tuple[dict[str, Fraction], dict[str, Fraction]]:
            groups, _ = await tephra.store.list(PodGroup, "default")
            queue_of = {g.metadata.name: g.spec.queue if g.spec else "" for g in groups}
            pods, _ = await tephra.store.list(Pod, "default")
            running: dict[str, Fraction] = defaultdict(Fraction)
            for pod in pods:
                group = (pod.metadata.annotations or {}).get("scheduling.k8s.io/group-name", "")
                if pod.spec and pod.spec.node_name and pod.status and pod.status.phase == "Running":
                    running[queue_of.get(group, "")] += Fraction(1)
            written: dict[str, Fraction] = {}
            for queue in queues:
                obj = await tephra.store.get(Queue, "", queue)
                allocated = (obj.status.allocated or {}) if obj.status else {}
                written[queue] = parse_quantity(str(allocated.get("cpu", "0")))
            return dict(running), written

        async def settled() -> bool:
            running, written = await figures()
            return sum(running.values()) == 32 and all(written[q] == running.get(q, 0) for q in queues)

        await eventually(settled, timeout=90, interval=0.5, what="every pod running, each queue's figure the sum")
        running, written = await figures()
        assert written == {"left": Fraction(16), "right": Fraction(16)}, (running, written)
        # Every instance owned some of the PodGroups: the figures came from three shares.
        owned = {
            name: scrape(system.services[name]).get("tephra_scheduler_owned_podgroups", 0.0) for name in SCHEDULERS
        }
        assert sum(1 for v in owned.values() if v > 0) >= 2, owned


# -- the ledger against a real JetStream KV: racing instances, group commit, rollback -----------------


async def test_ledger_writers_racing_on_one_node_never_overcommit(nc: Client) -> None:
    js = nc.jetstream()
    writers = [Ledger(js, instance=f"s{i}", can_write=lambda: True) for i in range(3)]
    pods = {
        f"u{i}": pure.PodState(node="", terminal=False, requests={"cpu": Fraction(1), "pods": Fraction(1)})
        for i in range(60)
    }
    view = pure.View.of(pods, live=frozenset({"s0", "s1", "s2"}), instance="s0", epoch=1)
    capacity = {"cpu": Fraction(10), "pods": Fraction(110)}

    async def reserve(writer: Ledger, uid: str) -> bool:
        new = {
            uid: pure.reservation(f"ns/{uid}", {"cpu": Fraction(1)}, instance=writer.instance, epoch=1, at=time.time())
        }
        outcome = await writer.reserve(node_key("n1"), new, capacity, {}, view, node="n1")
        return outcome.record is not None

    results = await asyncio.gather(*(reserve(writers[i % 3], f"u{i}") for i in range(60)))
    assert sum(results) == 10  # exactly the capacity, across three racing writers
    kv = await js.key_value("vc-sched-ledger")
    stored = pure.decode((await kv.get(node_key("n1"))).value)
    assert len(stored.reservations) == 10
    granted = {f"u{i}" for i, ok in enumerate(results) if ok}
    assert set(stored.reservations) == granted

    # A release frees the slots for another writer.
    await writers[0].release(node_key("n1"), list(granted)[:4])
    assert sum(await asyncio.gather(*(reserve(writers[1], f"u{i}") for i in range(40, 50)))) == 4


def binder_for(instance: str, led: Ledger) -> GangBinder:
    """A gang binder on the ledger alone (these tests reserve; nothing reaches the store)."""
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    owner = SoleOwner(instance)
    return GangBinder(None, SchedulerCache(), events, ownership=owner, work=InFlight(instance), ledger_kv=led)  # type: ignore[arg-type]


async def test_a_gang_refused_on_one_node_is_rolled_back_on_the_others(nc: Client) -> None:
    js = nc.jetstream()
    led = Ledger(js, instance="s0", can_write=lambda: True)
    state = {"cpu": Fraction(1), "pods": Fraction(1)}
    pods = {f"u{i}": pure.PodState(node="", terminal=False, requests=state) for i in range(4)}
    pods["x"] = pure.PodState(
        node="n2", terminal=False, requests={"cpu": Fraction(4), "pods": Fraction(1)}
    )  # n2 is full
    view = pure.View.of(pods, live=frozenset({"s0"}), instance="s0", epoch=1)
    binds = tuple(Bind(f"ns/p{i}", f"u{i}", "n1" if i < 2 else "n2") for i in range(4))
    gang = Gang(
        "ns/g",
        binds,
        {f"u{i}": {"cpu": Fraction(1)} for i in range(4)},
        {"n1": {"cpu": Fraction(4), "pods": Fraction(110)}, "n2": {"cpu": Fraction(4), "pods": Fraction(110)}},
        view,
    )
    binder = binder_for("s0", led)
    await binder.commit(gang)  # refused on n2: nothing bound, n1's reservations rolled back
    kv = await js.key_value("vc-sched-ledger")
    n1 = pure.decode((await kv.get(node_key("n1"))).value)
    assert n1.reservations == {}


async def test_instances_racing_in_sibling_queues_never_exceed_their_parents_capability(nc: Client) -> None:
    """A queue tree (capacity with enableHierarchy): gangs of two sibling queues reserved by two
    instances at once, on a parent capped at 6 cpu: exactly three gangs of two get through."""
    js = nc.jetstream()
    one = {"cpu": Fraction(1), "pods": Fraction(1)}
    pods = {f"{q}{i}": pure.PodState(node="", terminal=False, requests=one, queue=q) for q in "ab" for i in range(20)}
    parents = {"a": "org", "b": "org", "org": "root"}
    binders = []
    for instance in ("s0", "s1"):
        led = Ledger(js, instance=instance, can_write=lambda: True)
        view = pure.View.of(pods, parents=parents, live=frozenset({"s0", "s1"}), instance=instance, epoch=1)
        binders.append((binder_for(instance, led), view))

    def gang(queue: str, index: int, view: pure.View) -> Gang:
        uids = (f"{queue}{2 * index}", f"{queue}{2 * index + 1}")
        return Gang(
            f"ns/{queue}-{index}",
            tuple(Bind(f"ns/p-{uid}", uid, f"n{index}") for uid in uids),
            {uid: {"cpu": Fraction(1)} for uid in uids},
            {f"n{index}": {"cpu": Fraction(100), "pods": Fraction(110)}},
            view,
            capped_queues=(("org", {"cpu": Fraction(6)}),),
        )

    async def reserve(k: int) -> bool:
        binder, view = binders[k % 2]
        held: list[tuple[str, list[str]]] = []
        return await binder.reserve(gang("ab"[k % 2], k // 2, view), held)

    granted = await asyncio.gather(*(reserve(k) for k in range(20)))
    assert sum(granted) == 3
    kv = await js.key_value("vc-sched-ledger")
    org = pure.decode((await kv.get("queue.org")).value)
    assert len(org.reservations) == 6


async def test_a_joining_instance_is_cleared_only_once_the_sole_ones_binds_are_in_the_ledger(nc: Client) -> None:
    """The hand-over of solo.py on a real nats-server: an instance alone goes solo and journals a
    bind; once a second instance joins, the first stops at once, and the second is let bind only
    after the first's bind is a reservation in the stored ledger record."""
    js = nc.jetstream()
    stop = asyncio.Event()
    members = {name: Membership(nc, group="handover", instance=name, ttl_s=3.0) for name in ("a", "b")}
    solos = {name: SoloLedger(m, Ledger(js, instance=name, can_write=m.can_write)) for name, m in members.items()}
    key = node_key("handover-n1")
    async with asyncio.TaskGroup() as tg:
        tg.create_task(members["a"].run(stop))
        tg.create_task(solos["a"].run(stop))
        await eventually(solos["a"].solo)
        bound = pure.reservation("ns/p1", {"cpu": Fraction(1)}, instance="a", epoch=members["a"].epoch, at=time.time())
        solos["a"].journal({key: {"uid-1": bound}})

        tg.create_task(members["b"].run(stop))
        tg.create_task(solos["b"].run(stop))
        await eventually(lambda: members["a"].members == ("a", "b"))
        assert not solos["a"].solo()  # a peer is seen: no more binds without the ledger
        while not solos["b"].cleared():  # noqa: ASYNC110 - the vouch arrives on b's lease watch
            await asyncio.sleep(0.005)
        kv = await js.key_value("vc-sched-ledger")
        stored = pure.decode((await kv.get(key)).value)
        assert "uid-1" in stored.reservations, "b was let bind before a's solo bind was in the ledger"
        await eventually(solos["a"].cleared)  # b, which never ran alone, vouches for a too
        stop.set()

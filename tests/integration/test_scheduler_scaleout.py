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
import contextlib
import dataclasses
import json
import re
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client
from nats.js.errors import NoKeysError
from prometheus_client import REGISTRY

from tests.support.services import ServiceProcess
from tests.support.system import System, start_system
from tests.support.waiting import eventually
from tests.unit.scheduler_service.service_builders import FixedPods
from tests.unit.scheduler_service.service_builders import group as group_view
from tests.unit.scheduler_service.service_builders import pod as pod_view
from vc_bus.connection import connect
from vc_bus.store import NatsStore
from vc_cli.client import Tephra
from vc_core.errors import Conflict
from vc_core.ownership import rendezvous_owner
from vc_core.quantity import parse_quantity
from vc_proto import api
from vc_proto.batch import Job
from vc_proto.core import Node, Pod
from vc_proto.pod_shards import shard_of_key
from vc_proto.scheduling import PodGroup, Queue
from vc_runtime.sharding import SoleOwner
from vc_sched_core.framework.decisions import Bind
from vc_sched_core.snapshot.cluster import NodeObj
from vc_scheduler import ledger as pure
from vc_scheduler import ledger_kv
from vc_scheduler.binder import BOUND_BY, GangBinder
from vc_scheduler.cache import SchedulerCache
from vc_scheduler.cluster_index import ClusterIndex
from vc_scheduler.events import SchedulerEvents
from vc_scheduler.gangs import Gang
from vc_scheduler.inflight import InFlight
from vc_scheduler.ledger_kv import Ledger, queue_key
from vc_scheduler.lending import LoanBook
from vc_scheduler.loans import LoanDesk
from vc_scheduler.peers import Several
from vc_scheduler.shard_records import SUMS_PREFIX, OtherShards, ShardTally, decode_sums, parse_key, sums_key
from vc_scheduler.share import node_owner_key

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
            api.Create,
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

        # Every pod finished: the shard records, whoever owned each shard through the crash and the
        # pause, count no pod asking or placed any more (a dead owner's records were rewritten).
        async def records_emptied() -> bool:
            return all(asked == placed == 0 for _, asked, placed in (await published_sums(nc)).values())

        if not left:
            await eventually(records_emptied, timeout=30, interval=0.5, what="the shard records emptied")

    stats = {name: scrape(system.services[name]) for name in SCHEDULERS[1:]}
    print(f"\njobs={len(names)} samples={inv.samples} max node cpu={inv.max_node_cpu}", end=" ")
    print(f"max capped queue cpu={inv.max_queue_cpu}")
    for name, s in stats.items():
        print(name, {k: v for k, v in sorted(s.items()) if v})
    by_instance = Counter(b.split("/")[0] for b in inv.bound_by.values())
    print("binds by instance:", dict(by_instance))

    # A broken invariant often explains jobs that never completed: both are reported together.
    problems = ([f"{len(left)} jobs never completed, e.g. {left[:5]}"] if left else []) + inv.violations[:20]
    assert not problems, "\n".join(problems) + f"\n{system.logs()}"
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

        # What each shard's owner published of its shard adds up to the same figures (shard_records.py).
        async def records_add_up() -> bool:
            published = await published_sums(nc)
            return {queue: figures[0] for queue, figures in published.items()} == {"left": 16.0, "right": 16.0}

        await eventually(records_add_up, timeout=30, interval=0.5, what="the shard records sum to each queue's figure")

        # The cluster's gauges, exported by one instance from its own PodGroups and the others' records:
        # each queue's running tasks, and the one namespace's share of the nodes (32 of 48 cpu).
        async def gauges_add_up() -> bool:
            services = [system.services[name] for name in SCHEDULERS]
            tasks = {q: gauge_sum(services, "volcano_queue_session_start_task_count", q, "running") for q in queues}
            share = gauge_sum(services, "volcano_namespace_share", "default")
            return tasks == {"left": 16.0, "right": 16.0} and abs(share - 32 / 48) < 1e-6

        # (refreshed at a cycle once STATE_PERIOD_S passed: at the latest the idle gate's cycle after that)
        await eventually(gauges_add_up, timeout=60, interval=0.5, what="the cluster's gauges sum the three shares")


async def test_with_three_instances_a_gang_larger_than_any_ones_nodes_runs_on_borrowed_room(system: System) -> None:
    """A gang asking one cpu more than the most any instance's nodes hold fits only across instances:
    its owner's borrowing session asks the other owners what their nodes have left, borrows the rest,
    and every pod runs, no node over its cpu."""
    async with connect(system.url, name="submitter") as nc:
        tephra = Tephra(nc)
        nodes, _ = await tephra.store.list(Node, None)
        owned = Counter(rendezvous_owner(node_owner_key(n.metadata.name), SCHEDULERS) for n in nodes)
        size = max(owned.values()) * NODE_CPU + 1
        assert size <= len(nodes) * NODE_CPU, owned
        job = gang_job("wide", "default", duration_s=0)
        del job["spec"]["tasks"][0]["template"]["metadata"]["annotations"]  # (runs until deleted)
        job["spec"]["minAvailable"] = job["spec"]["tasks"][0]["replicas"] = size
        await tephra.submit(api.Create, job, namespace="default")

        async def placement() -> dict[str, str]:
            pods, _ = await tephra.store.list(Pod, "default")
            return {
                p.metadata.name: p.spec.node_name
                for p in pods
                if p.spec and p.spec.node_name and p.status and p.status.phase == "Running"
            }

        async def all_running() -> bool:
            return len(await placement()) == size

        await eventually(all_running, timeout=90, interval=0.5, what=f"the {size} pods of the wide gang running")
        per_node = Counter((await placement()).values())
        assert max(per_node.values()) <= NODE_CPU, per_node
        stats = [scrape(system.services[name]) for name in SCHEDULERS]
        assert sum(s.get("tephra_scheduler_foreign_node_binds", 0.0) for s in stats) > 0, stats
        assert sum(s.get("tephra_scheduler_loans:granted", 0.0) for s in stats) > 0, stats


def gauge_sum(services: list[ServiceProcess], metric: str, *labels: str) -> float:
    """A gauge's series with these label values, summed over the services' scrapes."""
    total = 0.0
    for service in services:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{service.health_port}/metrics", timeout=10) as response:
                text = response.read().decode()
        except OSError:
            continue
        for line in text.splitlines():
            m = re.match(rf"^{metric}\{{([^}}]*)\}} ([0-9.e+-]+)$", line)
            if m and re.findall(r'="([^"]*)"', m.group(1)) == list(labels):
                total += float(m.group(2))
    return total


async def published_sums(nc: Client) -> dict[str, tuple[float, int, int]]:
    """Per queue, what the shard records in the ledger bucket add up to: cpu allocated, pods asked, pods
    placed."""
    kv = await nc.jetstream().key_value("vc-sched-ledger")
    try:
        keys = [key for key in await kv.keys() if key.startswith(SUMS_PREFIX)]
    except NoKeysError:
        return {}
    out: dict[str, tuple[float, int, int]] = {}
    for key in keys:
        record, parsed = decode_sums((await kv.get(key)).value or b""), parse_key(key)
        assert record is not None and parsed is not None, key
        cpu, asked, placed = out.get(str(parsed[1]), (0.0, 0, 0))
        out[str(parsed[1])] = (cpu + record.allocated.get("cpu", 0.0), asked + record.asked, placed + record.placed)
    return out


# -- the ledger and the loans against a real nats-server ---------------------------------------------


@contextlib.asynccontextmanager
async def following(*ledgers: Ledger) -> AsyncIterator[None]:
    """The ledgers follow their bucket meanwhile, as an instance's do."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(led.follow(stop)) for led in ledgers]
    try:
        await asyncio.wait_for(asyncio.gather(*(led.synced.wait() for led in ledgers)), 10)
        yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def test_ledger_writers_racing_on_one_queue_never_exceed_its_capability(nc: Client) -> None:
    js = nc.jetstream()
    writers = [Ledger(js, instance=f"s{i}", can_write=lambda: True) for i in range(3)]
    async with following(*writers):
        await _race_on_one_queue(js, writers)


async def _race_on_one_queue(js: Any, writers: list[Ledger]) -> None:
    pods = {
        f"u{i}": pure.PodState(node="", terminal=False, requests={"cpu": Fraction(1), "pods": Fraction(1)})
        for i in range(60)
    }
    view = pure.View.of(pods, live=frozenset({"s0", "s1", "s2"}), instance="s0", epoch=1)
    capacity = {"cpu": Fraction(10)}

    async def reserve(writer: Ledger, uid: str) -> bool:
        new = {
            uid: pure.reservation(f"ns/{uid}", {"cpu": Fraction(1)}, instance=writer.instance, epoch=1, at=time.time())
        }
        outcome = await writer.reserve(queue_key("q1"), new, capacity, dict, view, node=None)
        return outcome.record is not None

    results = await asyncio.gather(*(reserve(writers[i % 3], f"u{i}") for i in range(60)))
    assert sum(results) == 10  # exactly the capability, across three racing writers
    kv = await js.key_value("vc-sched-ledger")
    stored = pure.decode((await kv.get(queue_key("q1"))).value)
    granted = {f"u{i}" for i, ok in enumerate(results) if ok}
    assert set(stored.reservations) == granted

    # A release frees the room for another writer.
    await writers[0].release(queue_key("q1"), list(granted)[:4])
    assert sum(await asyncio.gather(*(reserve(writers[1], f"u{i}") for i in range(40, 50)))) == 4


async def test_shard_records_reach_every_reader_and_a_fenced_writer_writes_none(nc: Client) -> None:
    """An owner's records, written through the ledger, reach another instance's reader; once its
    membership lapsed (fenced) it writes none; a value that is not a record is refused and counted."""
    js = nc.jetstream()
    allowed = [True]
    reader = OtherShards()
    owner = Ledger(js, instance="s0", can_write=lambda: allowed[0])
    other = Ledger(js, instance="s1", can_write=lambda: True, on_record=reader.apply)
    stop = asyncio.Event()
    follow = asyncio.create_task(other.follow(stop))
    try:
        tally = ShardTally()
        tally.count(7, "rec-q", {"cpu": 3.0}, {"cpu": 2.0}, 3, 2, 1, namespace="ns")
        assert await owner.write_records(tally.flush(1, frozenset({7}))) == []
        await eventually(lambda: "rec-q" in reader.queues, timeout=10, what="the record read")
        assert reader.queues["rec-q"].allocated == {"cpu": 2.0} and reader.queues["rec-q"].asked == 3

        allowed[0] = False
        tally.count(7, "rec-q", {"cpu": 3.0}, {"cpu": 2.0}, 3, 2, -1, namespace="ns")
        records = tally.flush(2, frozenset({7}))
        assert await owner.write_records(records) == [key for key, _ in records]  # refused: nothing written
        kv = await js.key_value("vc-sched-ledger")
        assert decode_sums((await kv.get(sums_key(7, "rec-q"))).value or b"") is not None
        tally.again([key for key, _ in records])
        allowed[0] = True
        assert await owner.write_records(tally.flush(3, frozenset({7}))) == []
        await eventually(lambda: "rec-q" not in reader.queues, timeout=10, what="the deletion read")

        before = decode_errors("vc-sched-ledger", "ShardRecord")
        await kv.put(sums_key(8, "rec-q"), b'{"revision": -1}')
        await eventually(
            lambda: decode_errors("vc-sched-ledger", "ShardRecord") > before, timeout=10, what="the bad record refused"
        )
        assert "rec-q" not in reader.queues
    finally:
        stop.set()
        await follow


async def test_a_capped_queue_counts_another_instances_pod_by_its_reservation_then_its_record(
    nc: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Instance a binds a pod in a capped queue; instance b counts it first by a's reservation, then by
    the sums record a writes of its shard (bound pods occupy the queue), and a takes the reservation
    back only after the record: at no point does b have room for a pod more than the capability."""
    js = nc.jetstream()
    index_a, index_b = ClusterIndex(), ClusterIndex()
    owns_a = lambda key: shard_of_key(key) < 32  # noqa: E731
    index_a.regroup(owns_a, lambda _n: True, frozenset(range(32)))
    index_b.regroup(lambda key: not owns_a(key), lambda _n: True, frozenset(range(32, 64)))
    a = Ledger(js, instance="a", can_write=lambda: True, on_record=index_a.others.apply)
    b = Ledger(js, instance="b", can_write=lambda: True, on_record=index_b.others.apply)
    group = next(f"ns/g{i}" for i in range(100) if owns_a(f"ns/g{i}"))
    pg = dataclasses.replace(group_view(group.split("/")[1], "capped"), phase="Running")
    capability = {"cpu": Fraction(2)}
    key = queue_key("capped")
    now = time.time()

    def view(index: ClusterIndex, instance: str) -> pure.View:
        return index.view(gone=frozenset(), live=frozenset({"a", "b"}), instance=instance, epoch=1)

    async def b_has_room() -> bool:
        mine = {"ub": pure.reservation("ns/b-pod", {"cpu": Fraction(1)}, instance="b", epoch=1, at=now)}
        vb = view(index_b, "b")
        outcome = await b.reserve(key, mine, capability, partial(vb.occupying_queue, "capped"), vb, node=None)
        if outcome.record is not None:
            await b.release(key, ["ub"])
        return outcome.record is not None

    async with following(a, b):
        for index in (index_a, index_b):
            index.stored_podgroup(group, pg)
        va = view(index_a, "a")
        new = {"ua": pure.reservation("ns/a-pod", {"cpu": Fraction(2)}, instance="a", epoch=1, at=now)}
        assert (await a.reserve(key, new, capability, partial(va.occupying_queue, "capped"), va, node=None)).record
        assert not await b_has_room()  # a's reservation counts
        bound = pod_view("a-pod", pg.name, node="n1", phase="Running")
        index_a.stored_pod("ns/a-pod", msgspec.structs.replace(bound, uid="ua", requests={"cpu": Fraction(2)}))
        assert index_a.counts("ua", frozenset(range(32)))
        peers = Several(a, pods=FixedPods(1))
        await peers.publish(index_a, frozenset(range(32)))
        assert "ua" not in a.record(key).reservations  # taken back once the record was written
        await eventually(lambda: bool(index_b.elsewhere("capped")), timeout=10, what="a's record read by b")
        assert index_b.elsewhere("capped") == {"cpu": Fraction(2), "pods": Fraction(1)}
        assert not await b_has_room()  # a's record counts

        # A try on a key read fresh waits until the records before it are read: with b's follower
        # stopped, a key changed since b's copy is not decided on (a conflict, tried again later).
    monkeypatch.setattr(ledger_kv, "CATCH_UP_S", 0.2)
    stale = Ledger(js, instance="b2", can_write=lambda: True)
    vb2 = view(index_b, "b2")
    mine = {"u2": pure.reservation("ns/b2-pod", {"cpu": Fraction(1)}, instance="b2", epoch=1, at=now)}
    with pytest.raises(Conflict):
        await stale.reserve(key, mine, {"cpu": Fraction(0)}, partial(vb2.occupying_queue, "capped"), vb2, node=None)


def decode_errors(source: str, kind: str) -> float:
    return REGISTRY.get_sample_value("tephra_decode_errors_total", {"source": source, "kind": kind}) or 0.0


class FixedShare:
    """peers.Peers as the binder and the loan desk read it, over a fixed split of the nodes."""

    def __init__(self, mine: set[str], owners: dict[str, str]) -> None:
        self._mine, self._owners, self._book = mine, owners, LoanBook()

    @property
    def book(self) -> LoanBook:
        return self._book

    def commits_on(self, node: str) -> bool:
        return node in self._mine

    def owner_of(self, node: str) -> str | None:
        return self._owners.get(node)


def cpu_node(name: str, cpu: int) -> NodeObj:
    return NodeObj(
        name=name, labels={}, taints=(), unschedulable=False, allocatable={"cpu": Fraction(cpu)}, max_pods=110
    )


def one_cpu_gang(name: str, node: str, count: int, view: pure.View, capped: str | None = None) -> Gang:
    uids = [f"{name}-{i}" for i in range(count)]
    return Gang(
        f"ns/{name}",
        tuple(Bind(f"ns/{uid}", uid, node) for uid in uids),
        {uid: {"cpu": Fraction(1)} for uid in uids},
        {node: {"cpu": Fraction(4), "pods": Fraction(110)}},
        view,
        capped_queues=((capped, {"cpu": Fraction(100)}),) if capped else (),
    )


async def test_a_loan_is_granted_only_where_it_fits_and_the_owners_own_commits_count_it(nc: Client) -> None:
    """Two instances over a real nats-server, s1 owning node n2 (4 cpu): s0 borrows 3 cpu there; a second
    ask for 2 is refused; s1's own gang of 2 planned before the loan is refused, one of 1 fits; once s0
    gives its loan back, s1's gang of 2 fits. A gang planned on a node as another's that is s0's own by
    commit time is refused. A gang whose loan is refused gives back its queue reservation (nothing is
    bound: all or nothing)."""
    js = nc.jetstream()
    shutdown = asyncio.Event()
    events = SchedulerEvents(lambda event: asyncio.sleep(0), source="test")
    owner_cache = SchedulerCache()
    owner_cache.nodes["n2"] = cpu_node("n2", 4)
    shares = {"s0": FixedShare({"n1"}, {"n2": "s1"}), "s1": FixedShare({"n2"}, {"n1": "s0"})}
    caches = {"s0": SchedulerCache(), "s1": owner_cache}
    desks = {name: LoanDesk(nc, caches[name], ownership=SoleOwner(name), lending=shares[name]) for name in ("s0", "s1")}
    binders = {
        name: GangBinder(
            None,  # type: ignore[arg-type]  # these tests reserve: nothing reaches the store
            caches[name],
            events,
            ownership=SoleOwner(name),
            work=InFlight(name),
            ledger_kv=Ledger(js, instance=name, can_write=lambda: True),
            peers=shares[name],  # type: ignore[arg-type]
            desk=desks[name],
        )
        for name in ("s0", "s1")
    }
    serving = [asyncio.create_task(desk.serve(shutdown)) for desk in desks.values()]
    try:
        view = pure.View(instance="s1", epoch=1, live=frozenset({"s0", "s1"}))

        async def reserve(instance: str, gang: Gang) -> tuple[bool, list[tuple[str, list[str]]]]:
            loans: list[tuple[str, list[str]]] = []
            held: list[tuple[str, list[str]]] = []
            return await binders[instance].reserve(gang, held, loans), loans

        async def borrowed() -> bool:
            return (await reserve("s0", one_cpu_gang("a", "n2", 3, view)))[0]

        await eventually(borrowed, timeout=10)  # once s1's desk is subscribed
        assert shares["s1"].book.lent(view, time.time()).keys() == {"a-0", "a-1", "a-2"}
        # What n2 has left, as its owner answers a borrower: its 4 cpu less the 3 it lent (an instance
        # nobody answers for lends nothing; an instance does not ask itself).
        left = await desks["s0"].free_on(["s1", "s0", "nobody"])
        assert left == {"s1": {"n2": {"cpu": Fraction(1), "pods": Fraction(107)}}}
        assert not (await reserve("s0", one_cpu_gang("b", "n2", 2, view)))[0]
        assert not (await reserve("s1", one_cpu_gang("own2", "n2", 2, view)))[0]  # the loan took the room
        assert (await reserve("s1", one_cpu_gang("own1", "n2", 1, view)))[0]
        await desks["s0"].give_back("s1", ["a-0", "a-1", "a-2"])
        await eventually(lambda: not shares["s1"].book.lends_on("n2"), timeout=10)
        assert (await reserve("s1", one_cpu_gang("own2", "n2", 2, view)))[0]

        # A node the cycle planned on as another's that became s0's own since: refused, planned again.
        became_own = dataclasses.replace(one_cpu_gang("d", "n1", 1, view), borrowed=frozenset({"n1"}))
        assert not (await reserve("s0", became_own))[0]
        assert (await reserve("s0", one_cpu_gang("d", "n1", 1, view)))[0]

        # s1's own binds in flight (assumed in its cache, not stored yet) hold their room: no loan takes it.
        await desks["s0"].give_back("s1", ["own1-0"])
        for i in range(3):
            owner_cache.pods[f"ns/mine-{i}"] = pod_view(f"mine-{i}", "g-mine")
            owner_cache.assume(f"ns/mine-{i}", "n2")
        assert not (await reserve("s0", one_cpu_gang("e", "n2", 2, view)))[0]
        assert (await reserve("s0", one_cpu_gang("e", "n2", 1, view)))[0]

        await binders["s0"].commit(one_cpu_gang("c", "n2", 5, view, capped="q"))  # n2 has 4: refused
        kv = await js.key_value("vc-sched-ledger")
        assert pure.decode((await kv.get(queue_key("q"))).value).reservations == {}  # rolled back
    finally:
        shutdown.set()
        await asyncio.gather(*serving)


@dataclass
class FakePods:
    """The pods stream as one instance's hand-over reads it: its end, and how far the cache followed."""

    last: int = 0
    at: int = 0
    covered: frozenset[int] | None = None

    def cover(self, shards: frozenset[int]) -> None:
        self.covered = shards

    def synced(self) -> bool:
        return True

    def followed_revision(self) -> int:
        return self.at

    async def last_revision(self) -> int:
        return self.last

    async def followed(self, revision: int, timeout_s: float) -> bool:
        return self.at >= revision


async def test_a_node_changes_owner_only_after_its_binds_landed_and_were_followed(nc: Client) -> None:
    """On a real nats-server: a alone, then b joins. a announces the new set only once nothing of its own
    is in flight (meanwhile it commits on none of its nodes), with how far its cache followed the pods
    stream; b plans a node a gave up only once its own cache followed the stream that far."""
    js = nc.jetstream()
    shutdown = asyncio.Event()
    ledgers = {name: Ledger(js, instance=name, can_write=lambda: True) for name in ("a", "b")}
    followers = [asyncio.create_task(led.follow(shutdown)) for led in ledgers.values()]
    in_flight = {"a": 0}
    now = [1000.0]

    async def tick(seconds: float) -> None:
        now[0] += seconds
        await asyncio.sleep(0)

    pods = {"a": FakePods(last=41, at=41), "b": FakePods(last=41, at=41)}
    a = Several(ledgers["a"], pods=pods["a"], in_flight=lambda: in_flight["a"], clock=lambda: now[0], sleep=tick)
    b = Several(ledgers["b"], pods=pods["b"], clock=lambda: now[0], sleep=tick)
    view = pure.View()
    try:
        await asyncio.wait_for(asyncio.gather(*(led.synced.wait() for led in ledgers.values())), 10)
        alone = await a.partition(("a",), view)
        assert alone.alone() and a.commits_on("n0")
        nodes = [f"n{i}" for i in range(40)]
        gives_up = [n for n in nodes if rendezvous_owner(node_owner_key(n), ("a", "b")) != "a"]
        assert gives_up

        in_flight["a"] = 1  # a gang of a's is being committed
        held = await a.partition(("a", "b"), view)
        assert held is alone and not any(a.commits_on(n) for n in nodes)  # handing over: no commits
        assert ledgers["a"].announced["a"].members == ("a",)  # not announced yet

        first_b = await b.partition(("a", "b"), view)
        assert not any(first_b.owns_node(n) for n in nodes)  # a's announcement still claims every node

        # b leaves again before a handed anything over: a commits on the nodes it keeps again at once.
        kept = next(n for n in nodes if n not in gives_up)
        await a.partition(("a",), view)
        assert a.commits_on(kept)
        await a.partition(("a", "b"), view)  # b is back: a is handing nodes over again
        assert not any(a.commits_on(n) for n in nodes)

        in_flight["a"] = 0
        pods["a"].at = pods["a"].last = 57  # a's cache has seen its last binds
        moved = await a.partition(("a", "b"), view)
        assert moved.members == ("a", "b") and a.commits_on(next(n for n in nodes if n not in gives_up))
        assert not any(a.commits_on(n) for n in gives_up)
        announced = ledgers["b"].announced
        await eventually(lambda: "a" in announced and announced["a"].pods_revision == 57, timeout=10)

        assert await b.partition(("a", "b"), view) is first_b  # b's cache is at 41: it plans as before
        pods["b"].at = 57
        taken = await b.partition(("a", "b"), view)
        assert {n for n in nodes if taken.owns_node(n)} == set(gives_up)
    finally:
        shutdown.set()
        await asyncio.gather(*followers)


async def test_an_instance_whose_announcement_was_removed_announces_again(nc: Client) -> None:
    """On a real nats-server: b removes a's announcement (a seemed gone: its lease lapsed behind a slow
    link, and it came back). a's next partition announces again: without its claim nobody would lend a's
    nodes, and the others' borrowing sessions would plan on them in vain, cycle after cycle."""
    js = nc.jetstream()
    shutdown = asyncio.Event()
    ledgers = {name: Ledger(js, instance=name, can_write=lambda: True) for name in ("a", "b")}
    followers = [asyncio.create_task(led.follow(shutdown)) for led in ledgers.values()]
    pods = {name: FakePods(last=5, at=5) for name in ("a", "b")}
    a = Several(ledgers["a"], pods=pods["a"])
    b = Several(ledgers["b"], pods=pods["b"])
    view = pure.View()
    nodes = [f"n{i}" for i in range(40)]
    try:
        await asyncio.wait_for(asyncio.gather(*(led.synced.wait() for led in ledgers.values())), 10)
        await a.partition(("a", "b"), view)
        await b.partition(("a", "b"), view)
        theirs = [n for n in nodes if rendezvous_owner(node_owner_key(n), ("a", "b")) == "a"]
        seen_by_b = ledgers["b"].announced
        await eventually(lambda: "a" in seen_by_b, timeout=10)
        claimed = await b.partition(("a", "b"), view)
        assert {n for n in nodes if claimed.owner_of_node(n) == "a"} == set(theirs)

        await ledgers["b"].retract("a", seen_by_b["a"].revision)  # as _retract_stale does
        await eventually(lambda: "a" not in ledgers["a"].announced, timeout=10)
        unclaimed = await b.partition(("a", "b"), view)
        assert not any(unclaimed.owner_of_node(n) for n in theirs)  # nobody would lend them

        await a.partition(("a", "b"), view)  # same members: a sees its claim is gone and makes it again
        await eventually(lambda: "a" in seen_by_b and seen_by_b["a"].members == ("a", "b"), timeout=10)
        again = await b.partition(("a", "b"), view)
        assert {n for n in nodes if again.owner_of_node(n) == "a"} == set(theirs)
    finally:
        shutdown.set()
        await asyncio.gather(*followers)

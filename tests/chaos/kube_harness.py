"""One kube-mode chaos schedule, end to end: a private etcd + kube-apiserver (kubed.py), one
nats-server, the relay and every service on `--backend kube`, the history recorded from etcd
(etcd_recorder.py), the load through admission, the schedule's faults, heal, drain, stop, and the
same checker over the whole history.

One more check than the embedded mode: once drained, the relay's NATS mirror must converge on what
the apiserver holds (every recorded key, at its newest resourceVersion, nothing extra): after 410
re-lists and relay restarts, what the services read is what is stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from nats.aio.client import Client
from nats.js.client import JetStreamContext

from tests.chaos.checker import Rules, Violation, check
from tests.chaos.etcd_recorder import EtcdRecorder
from tests.chaos.facts import TERMINAL_JOB_PHASES
from tests.chaos.faults import journal, wait_nats_ready
from tests.chaos.fleet import Fleet
from tests.chaos.harness import (
    DRAIN_TIMEOUT_S,
    PROGRESS_WINDOW_S,
    ScheduleResult,
    _grace,
    _node_args,
    _until,
    schedule_result,
)
from tests.chaos.history import RECORDED_KINDS, History
from tests.chaos.kube_plan import RELAY
from tests.chaos.kubed import KubeCluster
from tests.chaos.load import Load, queue_document
from tests.chaos.natsd import NatsTopology
from tests.chaos.plan import Fault, Schedule
from tests.chaos.proxy import FaultProxy
from tests.chaos.recorder import connect_to
from vc_bus.kvwatch import watch_bucket
from vc_core.store import WatchOp
from vc_proto.subjects import bucket, object_key, split_key

RELAY_INSTANCE = f"{RELAY}-0"
RELIST_WAIT_S = 60.0  # the relay retries a broken watch with a backoff of at most 5 s
MIRROR_WAIT_S = 60.0


class _Meta(msgspec.Struct):
    resourceVersion: str | None = None


class _Head(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


_head = msgspec.json.Decoder(_Head)


@dataclass
class KubeWorld:
    schedule: Schedule
    root: Path
    cluster: KubeCluster
    fleet: Fleet
    relay_link: FaultProxy  # between the relay and the apiserver
    recorder: EtcdRecorder
    nc: Client
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        journal(self.root)(text)

    def relists(self) -> int:
        """410 re-lists the relay logged so far (every run of it: its log is appended to)."""
        path = self.fleet.instances[RELAY_INSTANCE].log_path
        text = path.read_text(errors="replace") if path.exists() else ""
        return sum(1 for line in text.splitlines() if '"watch.relist"' in line)


async def run_kube_schedule(schedule: Schedule, root: Path, *, breaks: str = "", keep: bool = False) -> ScheduleResult:
    began = time.monotonic()
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    topology = NatsTopology(root / "nats", servers=1, sync="always")
    cluster = KubeCluster(root / "kube")
    history = History()
    recorder = EtcdRecorder("", history, note=journal(root))
    link: FaultProxy | None = None
    fleet: Fleet | None = None
    nc: Client | None = None
    result: ScheduleResult | None = None
    try:
        topology.start()
        await wait_nats_ready(topology.url)
        await asyncio.to_thread(cluster.start)
        recorder.url = cluster.etcd_url
        await recorder.install()  # before any object of a recorded kind exists
        link = await FaultProxy(cluster.api_port).start()
        relay_config = cluster.write_kubeconfig(root / "kube" / "relay-kubeconfig", link.port)
        names = schedule.instance_names()
        more = {
            n: ["--backend", "kube", "--kubeconfig", str(relay_config if n == RELAY_INSTANCE else cluster.kubeconfig)]
            for n in names
        }
        fleet = Fleet(
            root, urls=dict.fromkeys(names, topology.url), replicas=1, node_args=_node_args(schedule), breaks=breaks,
            more=more,
        )  # fmt: skip
        nc = await connect_to([topology.url], "chaos-load")
        world = KubeWorld(schedule, root, cluster, fleet, link, recorder, nc)
        result = await _run(world, history)
    finally:
        if fleet is not None:
            await asyncio.to_thread(fleet.stop_all)
        if nc is not None:
            with contextlib.suppress(Exception):
                await nc.close()
        await recorder.close()
        if link is not None:
            await link.close()
        await asyncio.to_thread(cluster.stop)
        await asyncio.to_thread(topology.stop)
    assert result is not None
    result.seconds = time.monotonic() - began
    return result


async def _run(world: KubeWorld, history: History) -> ScheduleResult:
    schedule, fleet, recorder = world.schedule, world.fleet, world.recorder
    names = schedule.instance_names()
    services = [n for n in names if not n.startswith(("node-sim", RELAY))]
    nodes = [n for n in names if n.startswith("node-sim")]
    stop = asyncio.Event()
    load = Load(world.nc, history)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(fleet.supervise(stop), name="supervisor")
        fleet.start([RELAY_INSTANCE])  # first: the services' caches fill from its mirror
        await fleet.wait_ready([RELAY_INSTANCE])
        fleet.start(services)
        await fleet.wait_ready(services)
        root_queue = object_key(None, "root")
        await _until(lambda: root_queue in recorder.key_last["Queue"], limit_s=60, what="the root queue")
        for queue in schedule.queues:
            created = await load.create(queue_document(queue))
            if created.outcome != "acked":
                raise RuntimeError(f"queue {queue.name} not created: {created.detail}")
        fleet.start(nodes)
        await fleet.wait_ready(nodes)
        await _until(lambda: len(recorder.nodes) >= schedule.options.nodes, limit_s=120, what="nodes registered")
        started = time.monotonic()
        world.note(f"load begins: {len(schedule.jobs)} jobs over {schedule.options.load_s:.0f} s")
        await asyncio.gather(load.run(schedule.jobs, started), run_kube_faults(world, started))
        world.note("load and faults over: healing")
        await heal(world)
        world.note("draining")
        drained = await _drain(load, recorder)
        history.end_at, history.drained = time.time(), drained
        stale = await mirror_stale(world)
        world.note(f"drained={drained}; mirror stale keys {len(stale)}; relists {world.relists()}; stopping")
        await asyncio.to_thread(fleet.stop_all)
        await recorder.final_check()
        world.note(f"recorded {recorder.events} changes up to rev {recorder.revision}, gaps {len(history.gaps)}")
        stop.set()
    rules = Rules(gang_grace_s=_grace(schedule), progress_window_s=PROGRESS_WINDOW_S)
    verdict = await asyncio.to_thread(check, history, rules)
    if stale:
        verdict.violations.append(
            Violation("mirror-stale", f"the relay's NATS mirror differs from the apiserver after the run: {stale[:10]}")
        )
    return await schedule_result(schedule, verdict, history, world.root, world.applied, world.skipped, drained, fleet)


async def _drain(load: Load, recorder: EtcdRecorder) -> bool:
    """Until every submission is answered and every job the apiserver holds is finished (or gone)."""

    def done() -> bool:
        return load.in_flight == 0 and all(p in TERMINAL_JOB_PHASES or p == "deleted" for p in recorder.jobs.values())

    try:
        await _until(done, limit_s=DRAIN_TIMEOUT_S, what="jobs finished")
    except TimeoutError:
        return False
    return True


# -- faults ------------------------------------------------------------------------------------------
async def run_kube_faults(world: KubeWorld, started: float) -> None:
    async with asyncio.TaskGroup() as tg:
        for fault in world.schedule.faults:
            tg.create_task(_at(world, fault, started), name=f"fault:{fault.label()}")


async def _at(world: KubeWorld, fault: Fault, started: float) -> None:
    wait = started + fault.at_s - time.monotonic()
    if wait > 0:
        await asyncio.sleep(wait)
    # Faults on the relay take turns with the whole-system ones too: a relay restarted in the middle of
    # gone-relist would start from a fresh list, and the 410 the fault is there to force never comes.
    async with world.turn if fault.global_ or fault.target == RELAY_INSTANCE else contextlib.nullcontext():
        world.note(f"fault {fault.label()}: begins")
        outcome = await _apply(world, fault)
    world.note(f"fault {fault.label()}: over ({outcome or 'applied'})")


async def _apply(world: KubeWorld, fault: Fault) -> str:
    """Carry out one fault; returns what it showed ("" when nothing to add). Appends to applied/skipped."""
    cluster, shown = world.cluster, ""
    match fault.kind:
        case "kill":
            world.fleet.instances[fault.target].kill()  # the supervisor restarts it
        case "stop":
            instance = world.fleet.instances[fault.target]
            for _ in range(100):  # killed a moment ago by another fault: pause it once it is back
                if instance.pause():
                    break
                await asyncio.sleep(0.1)
            else:
                world.skipped.append(f"{fault.label()} (never running)")
                return "skipped"
            await asyncio.sleep(fault.duration_s)
            instance.resume()
        case "apiserver-restart":
            before = world.relists()
            assert cluster.apiserver is not None
            cluster.apiserver.kill()
            await asyncio.sleep(fault.duration_s)
            await asyncio.to_thread(cluster.start_apiserver)
            shown = f"{await _relisted(world, before, limit_s=15.0)} re-lists"
        case "etcd-restart":
            assert cluster.etcd is not None
            cluster.etcd.kill()
            await asyncio.sleep(fault.duration_s)
            await asyncio.to_thread(cluster.start_etcd)
            await world.recorder.survey("etcd kill -9, restarted on its data dir")
        case "gone-relist":
            shown = await _gone(world, fault)
            if not shown.startswith("410"):
                world.skipped.append(f"{fault.label()} ({shown})")
                return shown
        case _:
            raise ValueError(f"{fault.kind}: not a kube-mode fault")
    world.applied.append(fault.label() + (f" ({shown})" if shown and fault.kind == "gone-relist" else ""))
    return shown


async def _gone(world: KubeWorld, fault: Fault) -> str:
    """The relay cut off while the others write on; the apiserver restarted meanwhile, so the revision
    each of the relay's watches resumes from is older than the new watch cache: 410, re-list."""
    # Only a relay that has listed and is watching can resume a watch (one restarted by an earlier
    # fault may still be listing through its back-off): wait for it to be ready first.
    await world.fleet.wait_ready([RELAY_INSTANCE])
    before = world.relists()
    world.relay_link.partition()
    await asyncio.sleep(fault.duration_s / 2)
    assert world.cluster.apiserver is not None
    world.cluster.apiserver.kill()
    await asyncio.to_thread(world.cluster.start_apiserver)
    await asyncio.sleep(fault.duration_s / 2)
    world.relay_link.heal()
    relisted = await _relisted(world, before, limit_s=RELIST_WAIT_S)
    return f"410: {relisted} kinds re-listed" if relisted else f"no 410 re-list within {RELIST_WAIT_S:.0f} s"


async def _relisted(world: KubeWorld, before: int, *, limit_s: float) -> int:
    """Re-lists the relay logged since `before`, once they stop coming (or `limit_s` passed)."""
    deadline, seen, quiet_since = time.monotonic() + limit_s, before, time.monotonic()
    while time.monotonic() < deadline:
        now = await asyncio.to_thread(world.relists)
        if now != seen:
            seen, quiet_since = now, time.monotonic()
        elif seen > before and time.monotonic() - quiet_since > 2.0:
            break
        await asyncio.sleep(0.25)
    return seen - before


async def heal(world: KubeWorld) -> None:
    """Whatever a fault left: every process running and resumed, the relay's link clear."""
    world.fleet.heal()
    world.relay_link.heal()
    cluster = world.cluster
    if cluster.etcd is not None and not cluster.etcd.alive():
        await asyncio.to_thread(cluster.start_etcd)
    if cluster.apiserver is not None and not cluster.apiserver.alive():
        await asyncio.to_thread(cluster.start_apiserver)


# -- the mirror --------------------------------------------------------------------------------------
async def mirror_stale(world: KubeWorld, limit_s: float = MIRROR_WAIT_S) -> list[str]:
    """Keys where the relay's NATS mirror still differs from etcd after `limit_s` (empty: converged)."""
    js = world.nc.jetstream(timeout=10)
    deadline = time.monotonic() + limit_s
    while True:
        _, stored = await world.recorder.newest()
        stale: list[str] = []
        for kind in RECORDED_KINDS:
            mirrored, twice = await _mirrored(js, kind)
            stale.extend(f"{kind} {key}: mirrored under two keys" for key in twice)
            for key in sorted(stored[kind].keys() | mirrored.keys()):
                want, have = stored[kind].get(key), mirrored.get(key)
                if want is None or have is None or have < want:
                    stale.append(f"{kind} {key}: apiserver rev {want or 'none'}, mirror rev {have or 'none'}")
        if not stale or time.monotonic() > deadline:
            return stale
        await asyncio.sleep(1.0)


async def _mirrored(js: JetStreamContext, kind: str) -> tuple[dict[str, int], list[str]]:
    """By `<namespace>.<name>` (etcd's keys: a pod's mirror key carries its shard too), the resourceVersion
    mirrored; and the objects mirrored under more than one key."""
    by_key: dict[str, int] = {}
    async for entry in watch_bucket(js, bucket(kind)):
        if entry.op is WatchOp.SYNCED:
            break
        if entry.op is WatchOp.PUT:
            try:
                by_key[entry.key] = int(_head.decode(entry.value).metadata.resourceVersion or 0)
            except (msgspec.DecodeError, ValueError):
                by_key[entry.key] = 0
        else:
            by_key.pop(entry.key, None)
    out: dict[str, int] = {}
    twice: list[str] = []
    for key, revision in by_key.items():
        name = object_key(*split_key(key))
        if name in out:
            twice.append(name)
        out[name] = revision
    return out, twice

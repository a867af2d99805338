"""Carrying out a schedule's faults on the running system, each at its planned time.

Process faults (kill -9, SIGSTOP/SIGCONT) and proxy faults may overlap anything; faults on the whole
system (NATS servers, the disk, the node flap storm) take turns. Every fault undoes itself when its
time is up, and `heal()` undoes whatever is left, so the run ends on a whole system.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nats
import nats.errors
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from tests.chaos.disk import StallableDisk
from tests.chaos.fleet import Fleet
from tests.chaos.natsd import NatsNode, NatsTopology
from tests.chaos.plan import Fault, Schedule
from tests.chaos.proxy import Link
from tests.chaos.recorder import STREAM_OF, Recorder
from vc_proto import subjects

NATS_READY_TIMEOUT_S = 90.0
FLAP_GIVE_UP_S = 120.0


@dataclass
class World:
    schedule: Schedule
    root: Path
    topology: NatsTopology
    fleet: Fleet
    links: dict[str, Link]
    recorder: Recorder
    nc: Client  # the harness's own connection (straight to the servers)
    disk: StallableDisk | None
    disk_unavailable: str = ""
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)  # one whole-system fault at a time
    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    flapped: list[str] = field(default_factory=list)  # nodes a storm made NotReady (made Ready on heal)

    def note(self, text: str) -> None:
        journal(self.root)(text)


def journal(root: Path) -> Callable[[str], None]:
    """Lines in the schedule's harness.log: what the harness did, and when."""

    def note(text: str) -> None:
        now = time.time()
        with (root / "harness.log").open("a") as log:
            log.write(f"{time.strftime('%H:%M:%S', time.gmtime(now))}.{int(now * 1000) % 1000:03d} {text}\n")

    return note


async def run_faults(world: World, started: float) -> None:
    async with asyncio.TaskGroup() as tg:
        for fault in world.schedule.faults:
            tg.create_task(_at(world, fault, started), name=f"fault:{fault.label()}")


async def _at(world: World, fault: Fault, started: float) -> None:
    wait = started + fault.at_s - time.monotonic()
    if wait > 0:
        await asyncio.sleep(wait)
    if fault.global_:
        async with world.turn:
            world.note(f"fault {fault.label()}: begins")
            await _apply(world, fault)
    else:
        world.note(f"fault {fault.label()}: begins")
        await _apply(world, fault)
    world.note(f"fault {fault.label()}: over")


async def _apply(world: World, fault: Fault) -> None:
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
                return
            await asyncio.sleep(fault.duration_s)
            instance.resume()
        case "proxy-delay" | "proxy-drop" | "proxy-partition":
            link = world.links[fault.target]
            if fault.kind == "proxy-delay":
                link.delay(fault.amount)
            else:
                link.drop() if fault.kind == "proxy-drop" else link.partition()
            await asyncio.sleep(fault.duration_s)
            link.heal()
        case "nats-kill":
            await _kill_server(world, world.topology.nodes[0], fault, "nats-server kill -9")
        case "server-kill" | "leader-kill":
            node = await _cluster_member(world, leader=fault.kind == "leader-kill")
            await _kill_server(world, node, fault, f"{fault.kind} ({node.name})")
        case "unsynced-loss":
            await _unsynced_loss(world, fault)
        case "disk-stall":
            if world.disk is None:
                world.skipped.append(f"{fault.label()} ({world.disk_unavailable})")
                return
            await asyncio.to_thread(world.disk.freeze)
            try:
                await asyncio.sleep(fault.duration_s)
            finally:
                await asyncio.to_thread(world.disk.thaw)
        case "node-flap":
            await _flap(world, fault)
    world.applied.append(fault.label())


async def _kill_server(world: World, node: NatsNode, fault: Fault, why: str) -> None:
    node.kill()
    await asyncio.sleep(fault.duration_s)
    # The only server back: the services wait (paused) a moment until the recorder listens again,
    # else their first writes could be overwritten before it hears them. (In a cluster the recorder
    # listens on the other servers all along.)
    held = world.fleet.pause_all() if len(world.topology.nodes) == 1 else []
    try:
        node.start()
        await wait_nats_ready(world.topology.url)
        await world.recorder.listening()
    finally:
        for instance in held:
            instance.resume()
    await world.recorder.survey(f"{why}, restarted on its file store")


async def _cluster_member(world: World, *, leader: bool) -> NatsNode:
    """The leader of the Pod bucket's stream (where binds land), or the first of its followers."""
    info = await world.recorder.js.stream_info(STREAM_OF["Pod"])
    assert info.cluster is not None
    if leader:
        return world.topology.node(str(info.cluster.leader))
    followers = sorted(str(r.name) for r in info.cluster.replicas or [])
    return world.topology.node(followers[0])


async def _unsynced_loss(world: World, fault: Fault) -> None:
    """Default fsync, then an OS crash: every write acknowledged since the last sync is gone.

    The last sync is modelled by a copy of the store taken with the server paused (one instant);
    writes go on for `duration_s` (acknowledged, never synced); then everything dies at once (an
    OS crash takes every process of the embedded system), the store is put back to the copy, and
    the system starts again. Everything acknowledged before the copy must be there afterwards.
    """
    node = world.topology.nodes[0]
    synced = await world.recorder.stream_heads()  # acknowledged before the copy: the copy holds them
    copy = world.root / "last-sync"
    await asyncio.to_thread(node.snapshot, copy)
    await asyncio.sleep(fault.duration_s)
    world.fleet.crash_all()
    world.fleet.hold_down()
    node.kill()
    await asyncio.to_thread(node.restore, copy)
    node.start()
    await wait_nats_ready(world.topology.url)
    await world.recorder.rolled_back(synced, "an OS crash that lost the unsynced interval")
    await world.recorder.listening()
    world.fleet.release()


async def _flap(world: World, fault: Fault) -> None:
    names = [f"node-{i}" for i in range(min(world.schedule.options.flap_nodes, world.schedule.options.nodes))]
    world.flapped = names
    await set_ready(world.nc, names, ready=False)
    await asyncio.sleep(fault.duration_s)
    await set_ready(world.nc, names, ready=True)
    world.flapped = []


async def set_ready(nc: Client, names: list[str], *, ready: bool) -> None:
    """Through node-sim's control subject (what `vcctl node ready|not-ready` sends), until it answers."""

    async def one(name: str) -> None:
        body = json.dumps({"node": name, "ready": ready}).encode()
        deadline = time.monotonic() + FLAP_GIVE_UP_S
        while True:
            try:
                reply = json.loads((await nc.request(subjects.NODE_SIM_CONTROL, body, timeout=5)).data)
                if "error" not in reply:
                    return
            except (nats.errors.Error, TimeoutError, OSError):
                pass  # node-sim paused, restarting or unreachable: ask again
            if time.monotonic() > deadline:
                raise RuntimeError(f"node-sim never made {name} {'Ready' if ready else 'NotReady'}")
            await asyncio.sleep(0.5)

    gate = asyncio.Semaphore(16)

    async def bounded(name: str) -> None:
        async with gate:
            await one(name)

    async with asyncio.TaskGroup() as tg:
        for name in names:
            tg.create_task(bounded(name), name=f"flap:{name}")


async def heal(world: World) -> None:
    """Undo whatever a fault left behind: every process running, every link and disk clear."""
    world.fleet.heal()
    for link in world.links.values():
        link.heal()
    if world.disk is not None:
        await asyncio.to_thread(world.disk.thaw)
    for node in world.topology.nodes:
        if not node.alive():
            node.start()
    await wait_nats_ready(world.topology.url)
    if world.flapped:
        await set_ready(world.nc, world.flapped, ready=True)


async def quiet(_: Exception) -> None:
    """nats-py prints a traceback per failed connection attempt by default; a chaos run expects them."""


async def wait_nats_ready(url: str, limit_s: float = NATS_READY_TIMEOUT_S) -> None:
    """Until JetStream answers (and, in a cluster, the Pod bucket has a leader) on a fresh connection."""
    deadline = time.monotonic() + limit_s
    last_error = ""
    while time.monotonic() < deadline:
        try:
            nc = await nats.connect(
                servers=url.split(","),
                connect_timeout=1,
                max_reconnect_attempts=0,
                allow_reconnect=False,
                error_cb=quiet,
            )
        except Exception as exc:  # not listening yet
            last_error = repr(exc)
            await asyncio.sleep(0.2)
            continue
        try:
            js = nc.jetstream(timeout=2)
            await js.account_info()
            try:
                await js.stream_info(STREAM_OF["Pod"])
            except NotFoundError:
                pass  # before the services created it
            return
        except Exception as exc:  # JetStream recovering, leaders being elected
            last_error = repr(exc)
            await asyncio.sleep(0.2)
        finally:
            await nc.close()
    raise RuntimeError(f"NATS not ready within {limit_s:.0f} s: {last_error}")

"""One chaos schedule, end to end: start the system, record, load it, inject the faults, heal, drain,
stop, and check the whole history.

Order matters at the start: the services create the buckets (with their replica count), then the
recorder starts recording them, then queues, nodes and jobs arrive, so every write the invariants
depend on is in the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nats.aio.client import Client

from tests.chaos import disk as disks
from tests.chaos.checker import Rules, Verdict, check
from tests.chaos.facts import TERMINAL_JOB_PHASES
from tests.chaos.faults import World, heal, journal, run_faults, wait_nats_ready
from tests.chaos.fleet import Fleet
from tests.chaos.history import History
from tests.chaos.load import Load, queue_document
from tests.chaos.natsd import NatsTopology
from tests.chaos.plan import Schedule
from tests.chaos.proxy import Link, open_link
from tests.chaos.recorder import Recorder, connect_to
from vc_cli.up import ensure_default_queues

# A gang may be placed below minMember this long (plus the longest fault of the schedule): binding
# and tearing down take a few writes each, and an owner that dies in between is replaced after its
# lease (3 s) and the ledger's reclaim of a dead instance's reservations (3 s).
GANG_GRACE_BASE_S = 30.0
# A whole-system crash (unsynced-loss) restarts every process: they need their start-up on top.
RESTART_ALL_S = 45.0
PROGRESS_WINDOW_S = 60.0
DRAIN_TIMEOUT_S = 300.0
CAUGHT_CHECK_EVERY_S = 2.0  # how often a broken build's drain looks for the violation it must show


@dataclass
class ScheduleResult:
    schedule: Schedule
    verdict: Verdict
    root: Path
    seconds: float
    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    submitted: int = 0
    acked: int = 0
    unknown: int = 0
    drained: bool = False
    crashes: str = ""
    crash_lines: list[str] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return len(self.verdict.violations)

    def line(self) -> str:
        s, v = self.schedule, self.verdict
        parts = [
            f"schedule {s.index} seed={s.seed} topology={s.topology}",
            f"faults=[{', '.join(self.applied)}]",
            f"jobs submitted={self.submitted} acked={self.acked} completed={v.finished}",
        ]
        if v.progressing or not self.drained:
            parts.append(f"progressing={v.progressing} drained={'yes' if self.drained else 'no'}")
        if v.lost_unsynced or self.unknown:
            parts.append(f"lost-unsynced={v.lost_unsynced} unknown={self.unknown}")
        parts.append(f"binds={v.binds} queue-full={v.queue_full_moments} changes={v.changes}")
        if self.skipped:
            parts.append(f"skipped=[{', '.join(self.skipped)}]")
        if self.crashes:
            parts.append(f"crashed=[{self.crashes}]")
        parts.append(f"violations={self.violations} ({self.seconds:.0f} s)")
        return " ".join(parts)


async def run_schedule(
    schedule: Schedule,
    root: Path,
    *,
    breaks: str = "",
    keep: bool = False,
    caught_by: frozenset[str] = frozenset(),
    drain_limit_s: float = DRAIN_TIMEOUT_S,
) -> ScheduleResult:
    """Run `schedule` and check its whole history. With `caught_by` (a broken build's test: invariants
    that hold at every moment, such as node-allocatable), the drain ends as soon as the history so far
    breaks one of them: a broken build may never drain, and what it must show is already shown.
    `drain_limit_s`: the longest the drain waits (a broken build's run that shows nothing by then
    gives the next schedule its turn sooner)."""
    began = time.monotonic()
    result: ScheduleResult | None = None
    await asyncio.to_thread(root.mkdir, parents=True, exist_ok=True)
    topology = NatsTopology(root / "nats", servers=schedule.servers, sync=schedule.sync)
    reason = disks.unavailable()
    disk = None if schedule.servers > 1 or reason else disks.StallableDisk(root / "disk.img", topology.nodes[0].store)
    history = History()
    links: dict[str, Link] = {}
    fleet: Fleet | None = None
    clients: list[Client] = []
    recorders: list[Recorder] = []
    try:
        if disk is not None:
            await asyncio.to_thread(disk.mount)
        topology.start()
        await wait_nats_ready(topology.url)
        for name in schedule.proxied:
            links[name] = await open_link(name, [n.port for n in topology.nodes])
        urls = {n: links[n].url if n in links else topology.url for n in schedule.instance_names()}
        fleet = Fleet(root, urls=urls, replicas=topology.replicas, node_args=_node_args(schedule), breaks=breaks)
        recorder = Recorder(topology.url, history, note=journal(root))
        recorders.append(recorder)
        nc = await connect_to(topology.url.split(","), "chaos-load")
        clients.append(nc)
        world = World(schedule, root, topology, fleet, links, recorder, nc, disk, reason or "")
        result = await _run(world, history, caught_by, drain_limit_s)
    finally:
        if fleet is not None:
            await asyncio.to_thread(fleet.stop_all)
        for client in clients:
            with contextlib.suppress(Exception):
                await client.close()
        for recorder in recorders:
            await recorder.close()
        for link in links.values():
            await link.close()
        await asyncio.to_thread(topology.stop)
        if disk is not None:
            if keep or (result is not None and result.violations):
                await asyncio.to_thread(disk.keep_copy, root / "nats-store")
            await asyncio.to_thread(disk.unmount)
    assert result is not None
    result.seconds = time.monotonic() - began
    return result


def _node_args(schedule: Schedule) -> list[str]:
    o = schedule.options
    return [
        "--nodes",
        str(o.nodes),
        "--node-cpu",
        o.node_cpu,
        "--node-memory",
        o.node_memory,
        "--node-gpu",
        "0",
        "--node-pods",
        o.node_pods,
        "--start-delay",
        "0.2",
    ]


async def _run(world: World, history: History, caught_by: frozenset[str], drain_limit_s: float) -> ScheduleResult:
    schedule, fleet, recorder = world.schedule, world.fleet, world.recorder
    services = [n for n in schedule.instance_names() if not n.startswith("node-sim")]
    stop = asyncio.Event()
    load = Load(world.nc, history)
    async with asyncio.TaskGroup() as tg:
        tg.create_task(fleet.supervise(stop), name="supervisor")
        fleet.start(services)
        await fleet.wait_ready(services)
        await recorder.install()  # the buckets exist now: the services created them
        tg.create_task(recorder.repair(stop), name="recorder-repair")
        await ensure_default_queues(world.topology.url)
        for queue in schedule.queues:
            created = await load.create(queue_document(queue))
            if created.outcome != "acked":
                raise RuntimeError(f"queue {queue.name} not created: {created.detail}")
        nodes = [n for n in schedule.instance_names() if n.startswith("node-sim")]
        fleet.start(nodes)
        await fleet.wait_ready(nodes)
        await _until(lambda: len(recorder.nodes) >= schedule.options.nodes, limit_s=120, what="nodes registered")
        started = time.monotonic()
        world.note(f"load begins: {len(schedule.jobs)} jobs over {schedule.options.load_s:.0f} s")
        await asyncio.gather(load.run(schedule.jobs, started), run_faults(world, started))
        world.note("load and faults over: healing")
        await heal(world)
        world.note("draining")
        drained = await _drain(load, recorder, lambda: _caught(history, caught_by), drain_limit_s)
        history.end_at, history.drained = time.time(), drained
        ledger = await asyncio.to_thread(fleet.metric_totals, "scheduler", "tephra_scheduler_")
        world.note(f"drained={drained}; scheduler metrics {ledger}; stopping the services")
        await asyncio.to_thread(fleet.stop_all)
        await recorder.final_check()
        world.note(f"recorded {recorder.copies} copies, revisions {recorder.last}, gaps {len(history.gaps)}")
        stop.set()
    rules = Rules(gang_grace_s=_grace(schedule), progress_window_s=PROGRESS_WINDOW_S)
    verdict = await asyncio.to_thread(check, history, rules)
    return await schedule_result(schedule, verdict, history, world.root, world.applied, world.skipped, drained, fleet)


async def schedule_result(
    schedule: Schedule,
    verdict: Verdict,
    history: History,
    root: Path,
    applied: list[str],
    skipped: list[str],
    drained: bool,
    fleet: Fleet,
) -> ScheduleResult:
    """One schedule's outcome (either mode); with violations, the history is kept beside the logs."""
    if verdict.violations:
        await asyncio.to_thread(_dump, history, root / "history.jsonl")
    subs = history.submissions
    return ScheduleResult(
        schedule,
        verdict,
        root,
        0.0,
        applied,
        skipped,
        submitted=len(subs),
        acked=sum(s.outcome == "acked" for s in subs),
        unknown=sum(s.outcome == "unknown" for s in subs),
        drained=drained,
        crashes=fleet.crash_report(),
        crash_lines=[line for name in sorted(fleet.crashes) for line in fleet.crash_lines(name, 2)],
    )


def _grace(schedule: Schedule) -> float:
    crash_all = any(f.kind == "unsynced-loss" for f in schedule.faults)
    return GANG_GRACE_BASE_S + schedule.longest_fault_s() + (RESTART_ALL_S if crash_all else 0.0)


async def _drain(load: Load, recorder: Recorder, caught: Callable[[], bool], limit_s: float) -> bool:
    """Until every submission is answered and every job the store holds is finished (or gone), or
    `caught` says the run has shown what it was for (then it has not drained)."""
    looked_at = time.monotonic()

    def finished() -> bool:
        return load.in_flight == 0 and all(p in TERMINAL_JOB_PHASES or p == "deleted" for p in recorder.jobs.values())

    def done() -> bool:
        nonlocal looked_at
        if time.monotonic() - looked_at >= CAUGHT_CHECK_EVERY_S:
            looked_at = time.monotonic()
            if caught():
                return True
        return finished()

    try:
        await _until(done, limit_s=limit_s, what="jobs finished")
    except TimeoutError:
        return False
    return finished()


def _caught(history: History, invariants: frozenset[str]) -> bool:
    """Whether the history so far breaks one of `invariants`. Only for rules that hold at every moment
    (node-allocatable, queue-capability): a prefix of the history shows their violations as the whole would."""
    return bool(invariants) and any(v.invariant in invariants for v in check(history).violations)


async def _until(check: Callable[[], bool], *, limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {limit_s:.0f} s")
        await asyncio.sleep(0.2)


def _dump(history: History, path: Path) -> None:
    with path.open("w") as out:
        for record in [*history.records, *history.submissions, *history.gaps]:
            out.write(json.dumps({"type": type(record).__name__, **dataclasses.asdict(record)}, default=str) + "\n")

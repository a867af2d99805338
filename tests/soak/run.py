"""One soak: the embedded system (a real nats-server, every service a process, node-sim's nodes), a steady
stream of gang jobs through admission, and every process sampled until the time is up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import msgspec
import structlog

from tests.soak.probe import asyncio_tasks, open_fds, rss_mib
from tests.soak.verdict import NATS_RSS_SLACK_MIB, RSS_SLACK_MIB, Growth, Sample, judge, table
from tests.support.secure import open_test_bus
from tests.support.system import System
from vc_bus.connection import connect
from vc_bus.store import NatsStore
from vc_proto import api, subjects
from vc_proto.batch import Job

log = structlog.get_logger(__name__)
_reply = msgspec.json.Decoder(api.WriteReply)
TERMINAL = {"Completed", "Failed", "Aborted", "Terminated"}


@dataclass(frozen=True)
class Options:
    minutes: float = 60.0
    warmup_minutes: float = 10.0
    jobs_per_s: float = 2.0
    nodes: int = 8
    interval_s: float = 15.0


@dataclass
class Counts:
    acknowledged: int = 0
    refused: int = 0
    backlog: list[tuple[float, int]] = field(default_factory=list)  # (at_s, jobs not finished yet)


def soak_job(index: int) -> bytes:
    """A gang of 1-3 pods of 1-3 s; gc deletes it 5 s after it finishes, so the store stays level."""
    replicas, seconds = 1 + index % 3, 1 + index % 3
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "256Mi"}}}
    template = {
        "metadata": {"annotations": {"sim.tephra.dev/duration": f"{seconds}s"}},
        "spec": {"restartPolicy": "Never", "containers": [container]},
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"soak-{index}", "namespace": "default"},
        "spec": {
            "schedulerName": "volcano",
            "queue": "default",
            "minAvailable": replicas,
            "ttlSecondsAfterFinished": 5,
            "tasks": [{"name": "work", "replicas": replicas, "template": template}],
        },
    }
    return json.dumps({"operation": "create", "object": job}).encode()


async def steady_load(url: str, options: Options, counts: Counts, stop: asyncio.Event) -> None:
    """One job every 1/jobs_per_s seconds, on a fixed timetable (a slow answer does not slow the rate)."""
    loop = asyncio.get_running_loop()
    period = 1.0 / options.jobs_per_s
    async with connect(url, name="soak-load") as nc, asyncio.TaskGroup() as tg:

        async def submit(index: int) -> None:
            reply = _reply.decode((await nc.request(subjects.ADMISSION_WRITE, soak_job(index), timeout=60)).data)
            if reply.error is None:
                counts.acknowledged += 1
            else:
                counts.refused += 1
                log.warning("soak.refused", job=index, code=reply.error.code, message=reply.error.message)

        index, due = 0, loop.time()
        while not stop.is_set():
            tg.create_task(submit(index))
            index += 1
            due += period
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=max(0.0, due - loop.time()))


def child_pid(command: str) -> int:
    """The pid of this process's child running `command` (the nats-server System started)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and Path(f"/proc/{entry}/comm").read_text().strip() == command:
                return int(entry)
    raise LookupError(f"no child process {command}")


async def sample_all(system: System, nats_pid: int, at_s: float) -> dict[str, Sample]:
    """One sample of every process; a process that is gone raises (the soak fails: nothing may exit)."""
    samples = {"nats-server": Sample(at_s, rss_mib(nats_pid), open_fds(nats_pid), None)}
    for name, service in system.services.items():
        assert service.proc is not None
        if service.proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {service.proc.returncode}: {service.log_text()[-2000:]}")
        pid = service.proc.pid
        tasks = await asyncio.to_thread(asyncio_tasks, service.health_port)
        samples[name] = Sample(at_s, rss_mib(pid), open_fds(pid), tasks)
    return samples


async def backlog(url: str) -> int:
    """Jobs in the store that have not finished (a system that keeps up holds this level)."""
    async with connect(url, name="soak-survey") as nc:
        jobs, _ = await NatsStore(nc).list(Job)
    return sum(1 for j in jobs if not (j.status and j.status.state and j.status.state.phase in TERMINAL))


async def soak(root: Path, options: Options) -> tuple[list[Growth], Counts]:
    open_test_bus(root / "auth")
    system = System(root / "system", nodes=options.nodes)
    (root / "system").mkdir(parents=True, exist_ok=True)
    await system.start()
    try:
        nats_pid = child_pid("nats-server")
        counts, series = Counts(), {}
        stop = asyncio.Event()
        started = time.monotonic()
        load = asyncio.create_task(steady_load(system.url, options, counts, stop))
        try:
            while (elapsed := time.monotonic() - started) < options.minutes * 60:
                for name, sample in (await sample_all(system, nats_pid, elapsed)).items():
                    series.setdefault(name, []).append(sample)
                counts.backlog.append((round(elapsed), await backlog(system.url)))
                print(
                    f"[soak] {elapsed / 60:5.1f} min: acknowledged {counts.acknowledged}, refused {counts.refused}, "
                    f"unfinished {counts.backlog[-1][1]}, RSS total "
                    f"{sum(s[-1].rss_mib for s in series.values()):.0f} MiB",
                    flush=True,
                )
                if load.done():
                    load.result()  # the load failed: say why
                await asyncio.sleep(options.interval_s)
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await load
        growths = [
            judge(
                name,
                samples,
                options.warmup_minutes * 60,
                rss_slack_mib=NATS_RSS_SLACK_MIB if name == "nats-server" else RSS_SLACK_MIB,
            )
            for name, samples in series.items()
        ]
        (root / "samples.json").write_text(json.dumps({n: [asdict(s) for s in ss] for n, ss in series.items()}))
        return growths, counts
    finally:
        system.stop()


def report(growths: list[Growth], counts: Counts, options: Options) -> str:
    levels = [b for at, b in counts.backlog if at >= options.warmup_minutes * 60]
    lines = [
        f"soak: {options.minutes:g} min ({options.warmup_minutes:g} warm-up), "
        f"{options.jobs_per_s:g} jobs/s of 1-3 pods, {options.nodes} nodes: {counts.acknowledged} jobs acknowledged, "
        f"{counts.refused} refused; unfinished jobs "
        f"after warm-up between {min(levels, default=0)} and {max(levels, default=0)}",
        table(growths),
    ]
    problems = sum(len(g.problems) for g in growths)
    lines.append(f"soak problems: {problems}")
    return "\n".join(lines)

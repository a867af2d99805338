"""Job durations and queue wait times per queue, as CSV, from Tephra's event history.

    .venv/bin/python examples/job_stats.py --out DIR [-n NAMESPACE] [--queue QUEUE] [--since CURSOR]
                                           [--server URL] [--creds FILE]

Reads the history once up to now (vc_cli.sdk: `events(..., kinds=["Job"], live=False)`) and writes

- DIR/jobs.csv: one row per job: namespace, job, queue, submitted, started, finished, phase,
  wait_s (submitted to Running: the time it waited in its queue) and run_s (Running to its end);
- DIR/queues.csv: one row per queue: jobs, started, finished, mean and max of wait_s and run_s;

and prints the cursor of the last event it read: `--since` that cursor reads only what came after it
(a job that began before it is then counted from what follows). The connection and identity are
vcctl's (`--server`/VC_SERVER, `--creds`/VC_NATS__CREDS, else the admin of `vcctl up`'s data directory);
a tenant gives `-n` (it reads its own namespaces only).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from vc_cli.sdk import Event, open_client
from vc_core.times import parse_rfc3339

ENDED = frozenset({"Completed", "Failed", "Aborted", "Terminated"})
JOB_COLUMNS = ("namespace", "job", "queue", "submitted", "started", "finished", "phase", "wait_s", "run_s")
QUEUE_COLUMNS = ("queue", "jobs", "started", "finished", "mean_wait_s", "max_wait_s", "mean_run_s", "max_run_s")


@dataclass
class JobTimes:
    namespace: str
    job: str
    queue: str = ""
    submitted: str = ""
    started: str = ""
    finished: str = ""
    phase: str = ""

    @property
    def wait_s(self) -> float | None:
        return _seconds(self.submitted, self.started)

    @property
    def run_s(self) -> float | None:
        return _seconds(self.started, self.finished)


class JobStats:
    """What the Job events say about each job: pure, fed one event at a time in stream order."""

    def __init__(self) -> None:
        self.jobs: dict[tuple[str, str], JobTimes] = {}

    def add(self, item: Event) -> None:
        e = item.event
        if e.kind != "Job" or e.reason != "PhaseChanged" or not e.phase:
            return
        key = (e.namespace or "", e.name)
        times = self.jobs.setdefault(key, JobTimes(*key))
        times.queue = e.queue or times.queue
        times.phase = e.phase
        if e.phase == "Pending" and not e.previous_phase:
            times.submitted = e.occurred_at  # created: the first phase a job takes
        elif e.phase == "Running" and not times.started:
            times.started = e.occurred_at
        elif e.phase in ENDED:
            times.finished = e.occurred_at

    def job_rows(self) -> list[dict[str, object]]:
        return [
            {**{c: getattr(t, c) for c in JOB_COLUMNS[:7]}, "wait_s": _text(t.wait_s), "run_s": _text(t.run_s)}
            for _, t in sorted(self.jobs.items())
        ]

    def queue_rows(self) -> list[dict[str, object]]:
        by_queue: dict[str, list[JobTimes]] = {}
        for times in self.jobs.values():
            by_queue.setdefault(times.queue, []).append(times)
        return [_queue_row(queue, jobs) for queue, jobs in sorted(by_queue.items())]


def _queue_row(queue: str, jobs: list[JobTimes]) -> dict[str, object]:
    waits = [w for w in (j.wait_s for j in jobs) if w is not None]
    runs = [r for r in (j.run_s for j in jobs) if r is not None]
    return {
        "queue": queue,
        "jobs": len(jobs),
        "started": len(waits),
        "finished": len(runs),
        "mean_wait_s": _text(sum(waits) / len(waits) if waits else None),
        "max_wait_s": _text(max(waits, default=None)),
        "mean_run_s": _text(sum(runs) / len(runs) if runs else None),
        "max_run_s": _text(max(runs, default=None)),
    }


def _seconds(start: str, end: str) -> float | None:
    if not start or not end:
        return None
    return (parse_rfc3339(end) - parse_rfc3339(start)).total_seconds()


def _text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def write_csv(path: Path, columns: tuple[str, ...], rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


async def collect(args: argparse.Namespace) -> str:
    stats = JobStats()
    last = args.since or ""
    async with open_client(args.server, creds=args.creds, name="job-stats") as tephra:
        events = tephra.events(namespace=args.namespace, queue=args.queue, kinds=["Job"], since=args.since, live=False)
        async for item in events:
            stats.add(item)
            last = str(item.cursor)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "jobs.csv", JOB_COLUMNS, stats.job_rows())
    write_csv(args.out / "queues.csv", QUEUE_COLUMNS, stats.queue_rows())
    return last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="directory for jobs.csv and queues.csv")
    parser.add_argument("-n", "--namespace", help="one namespace (default: every one the identity reads)")
    parser.add_argument("--queue", help="only the jobs of this queue")
    parser.add_argument("--since", help="only the events after this cursor")
    parser.add_argument("--server", help="NATS URL of Tephra (default: VC_SERVER, else nats://127.0.0.1:4222)")
    parser.add_argument("--creds", help="credentials file (default: vcctl's)")
    args = parser.parse_args(argv)
    try:
        last = asyncio.run(collect(args))
    except Exception as exc:  # a program's last line of defence: the reason, once
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"cursor: {last}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

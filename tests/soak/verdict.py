"""The soak's judgement, pure: from each process's samples after warm-up, whether anything grew.

A leak under steady load grows with the work done, so the first and last windows after warm-up are
compared (medians, so one busy moment does not decide). Bounds, per process:
- RSS: the last window's median at most max(RSS_SLACK_MIB, RSS_SLACK_FRACTION) above the first's
  (CPython's allocator and caches settle in steps; a leak of a few KiB per job passes any such bound
  within the hour at the soak's rate);
- asyncio tasks: the last window's median at most TASK_SLACK above the first's;
- open file descriptors: the last window's maximum at most FD_SLACK above the first's.
nats-server is held to NATS_RSS_SLACK_MIB instead: it keeps an index of every message its streams hold, and
the events stream fills towards its limits (age, bytes) throughout a run, so some growth is data, not a leak.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Final

RSS_SLACK_MIB: Final = 8.0
RSS_SLACK_FRACTION: Final = 0.10
NATS_RSS_SLACK_MIB: Final = 64.0
TASK_SLACK: Final = 10
FD_SLACK: Final = 5
WINDOW: Final = 5  # samples per window


@dataclass(frozen=True)
class Sample:
    at_s: float  # seconds since the load started
    rss_mib: float
    fds: int
    tasks: int | None  # None: the process has no /metrics (nats-server)


@dataclass(frozen=True)
class Growth:
    process: str
    rss_first_mib: float
    rss_last_mib: float
    rss_peak_mib: float
    fds_first: int
    fds_last: int
    tasks_first: float | None
    tasks_last: float | None
    problems: tuple[str, ...]

    @property
    def rss_growth_mib(self) -> float:
        return self.rss_last_mib - self.rss_first_mib


def judge(process: str, samples: list[Sample], warmup_s: float, *, rss_slack_mib: float = RSS_SLACK_MIB) -> Growth:
    """The growth of one process over the samples taken after `warmup_s`."""
    steady = [s for s in samples if s.at_s >= warmup_s]
    if len(steady) < 2 * WINDOW:
        return Growth(process, 0, 0, 0, 0, 0, None, None, (f"only {len(steady)} samples after warm-up",))
    first, last = steady[:WINDOW], steady[-WINDOW:]
    rss_first = statistics.median(s.rss_mib for s in first)
    rss_last = statistics.median(s.rss_mib for s in last)
    fds_first, fds_last = max(s.fds for s in first), max(s.fds for s in last)
    has_tasks = all(s.tasks is not None for s in steady)
    tasks_first = statistics.median(s.tasks or 0 for s in first) if has_tasks else None
    tasks_last = statistics.median(s.tasks or 0 for s in last) if has_tasks else None
    problems = []
    allowed = max(rss_slack_mib, RSS_SLACK_FRACTION * rss_first)
    if rss_last - rss_first > allowed:
        problems.append(f"RSS grew {rss_last - rss_first:.1f} MiB (from {rss_first:.1f}; at most {allowed:.1f})")
    if tasks_first is not None and tasks_last is not None and tasks_last - tasks_first > TASK_SLACK:
        problems.append(f"asyncio tasks grew from {tasks_first:g} to {tasks_last:g} (at most +{TASK_SLACK})")
    if fds_last - fds_first > FD_SLACK:
        problems.append(f"open files grew from {fds_first} to {fds_last} (at most +{FD_SLACK})")
    peak = max(s.rss_mib for s in steady)
    return Growth(process, rss_first, rss_last, peak, fds_first, fds_last, tasks_first, tasks_last, tuple(problems))


def table(growths: list[Growth]) -> str:
    """The figures as a Markdown table (docs/reliability.md quotes it)."""
    rows = [
        "| process | RSS after warm-up (MiB) | RSS at end | growth | peak | fds | asyncio tasks | verdict |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for g in growths:
        tasks = "-" if g.tasks_first is None else f"{g.tasks_first:g} -> {g.tasks_last:g}"
        verdict = "; ".join(g.problems) or "ok"
        rows.append(
            f"| {g.process} | {g.rss_first_mib:.1f} | {g.rss_last_mib:.1f} | {g.rss_growth_mib:+.1f} | "
            f"{g.rss_peak_mib:.1f} | {g.fds_first} -> {g.fds_last} | {tasks} | {verdict} |"
        )
    return "\n".join(rows)

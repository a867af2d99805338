"""Run chaos schedules one after another and report: one line per schedule, then `violations: N`.

Exit 0 only when no schedule found a violation (1 otherwise, 2 when the harness itself failed).
A failing schedule keeps its directory (every process's log, the NATS stores) and prints how to
run it alone again.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from tests.chaos.harness import ScheduleResult, run_schedule
from tests.chaos.kube_harness import run_kube_schedule
from tests.chaos.kube_plan import KUBE_OPTIONS, make_kube_schedule
from tests.chaos.plan import Options, make_schedule

BREAKS = ("ledger-blind-write", "blind-fit")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--mode",
        choices=("embedded", "kube"),
        default="embedded",
        help="embedded: the NATS store; kube: a private kube-apiserver + etcd, mirrored by the relay",
    )
    parser.add_argument("--schedules", type=int, default=5, help="how many schedules (0, 1, ... k-1)")
    parser.add_argument("--only", type=int, action="append", help="run just this schedule index (repeatable)")
    parser.add_argument(
        "--break",
        dest="breaks",
        choices=BREAKS,
        default="",
        help="run a deliberately broken build (the checker must catch it)",
    )
    parser.add_argument(
        "--load-s", type=float, default=Options().load_s, help="seconds of job submissions per schedule"
    )
    parser.add_argument("--jobs-per-s", type=float, default=Options().jobs_per_s)
    parser.add_argument(
        "--no-faults", action="store_true", help="load only (to see a broken build caught by load alone)"
    )
    parser.add_argument("--root", type=Path, help="where schedules keep their data and logs (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep every schedule's directory, not only failing ones")
    args = parser.parse_args(argv)
    if args.schedules < 0 or args.schedules > 1000:
        parser.error("--schedules must be between 0 and 1000")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    _stop_cleanly_on_signals()
    kube = args.mode == "kube"
    options = dataclasses.replace(KUBE_OPTIONS if kube else Options(), load_s=args.load_s, jobs_per_s=args.jobs_per_s)
    plan, run = (make_kube_schedule, run_kube_schedule) if kube else (make_schedule, run_schedule)
    root = args.root or Path(tempfile.mkdtemp(prefix="tephra-chaos-"))
    indexes = args.only or list(range(args.schedules))
    header = f"chaos{' mode=kube' if kube else ''} seed={args.seed} schedules={len(indexes)} load={options.load_s:.0f}s"
    print(header + (f" BREAK={args.breaks}" if args.breaks else "") + f" (data in {root})", flush=True)
    total, errors = 0, 0
    results: list[ScheduleResult] = []
    for index in indexes:
        schedule = plan(args.seed, index, options, faults=not args.no_faults)
        where = root / f"schedule-{index}"
        try:
            result = asyncio.run(run(schedule, where, breaks=args.breaks, keep=args.keep))
        except Exception:  # the harness failed (not the system under test): say so, keep going
            errors += 1
            print(f"schedule {index} seed={args.seed} HARNESS ERROR (data in {where})", flush=True)
            traceback.print_exc(file=sys.stdout)
            continue
        report(result, args)
        results.append(result)
        total += result.violations
        if not result.violations and not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    if results:
        print(summary(results), flush=True)
    if errors:
        print(f"harness errors: {errors}", flush=True)
    print(f"violations: {total}", flush=True)
    return 2 if errors else (1 if total else 0)


def _stop_cleanly_on_signals() -> None:
    """Ctrl-C and SIGTERM both cancel the running schedule, whose clean-up then stops every process it
    started (they run in sessions of their own: nothing else would). A shell starting this in the
    background ignores SIGINT; asyncio.run cancels on SIGINT only when its handler is the default."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))


def report(result: ScheduleResult, args: argparse.Namespace) -> None:
    print(result.line(), flush=True)
    for line in result.crash_lines:
        print(f"    crashed {line}", flush=True)
    if not result.violations:
        return
    for violation in result.verdict.violations:
        print(violation.render(), flush=True)
    mode = " --mode kube" if args.mode == "kube" else ""
    rerun = f"python -m tests.chaos{mode} --seed {args.seed} --only {result.schedule.index}"
    extra = (f" --break {args.breaks}" if args.breaks else "") + (
        f" --load-s {args.load_s:g}" if args.load_s != Options().load_s else ""
    )
    print(f"    reproduce: {rerun}{extra}   (logs and stores in {result.root})", flush=True)


def summary(results: list[ScheduleResult]) -> str:
    """Per fault kind: in how many schedules it was applied, how often, and the violations of those
    schedules (a schedule's violations count against every fault it had)."""
    rows: dict[str, list[int]] = {}
    for result in results:
        kinds = [_fault_kind(label) for label in result.applied]
        for kind in sorted(set(kinds)):
            row = rows.setdefault(kind, [0, 0, 0])
            row[0] += 1
            row[1] += kinds.count(kind)
            row[2] += result.violations
    topologies: dict[str, int] = {}
    for result in results:
        topologies[result.schedule.topology] = topologies.get(result.schedule.topology, 0) + 1
    jobs = sum(r.acked for r in results)
    lines = [f"{'fault':<28}{'schedules':>10}{'applied':>9}{'violations':>11}"]
    lines += [f"{kind:<28}{s:>10}{a:>9}{v:>11}" for kind, (s, a, v) in sorted(rows.items())]
    lines.append("topologies: " + ", ".join(f"{k} x{n}" for k, n in sorted(topologies.items())))
    lines.append(
        f"jobs acknowledged {jobs}, finished {sum(r.verdict.finished for r in results)}, "
        f"lost with the unsynced interval {sum(r.verdict.lost_unsynced for r in results)}; "
        f"binds {sum(r.verdict.binds for r in results)}; changes checked {sum(r.verdict.changes for r in results)}"
    )
    return "\n".join(lines)


def _fault_kind(label: str) -> str:
    """ "kill scheduler-1@12s" -> "kill scheduler"; "nats-kill 2s@5s" -> "nats-kill"."""
    words = label.split("@", 1)[0].split(" ")
    if words[0] in ("kill", "stop") and len(words) > 1:
        return f"{words[0]} {words[1].rsplit('-', 1)[0]}"
    return words[0]

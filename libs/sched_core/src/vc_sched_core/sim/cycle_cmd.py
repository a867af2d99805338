"""The `vcctl sim cycle -f SNAPSHOT.yaml [--conf FILE] [--cycles N] -o json` command (the I/O shell
around run_cycle: read files, loop cycles, print JSON, map bad input to exit status 2)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import msgspec

from vc_core.errors import ConfigError, InvalidObject
from vc_sched_core.cycle import apply_result, load_scheduler_conf, run_cycle
from vc_sched_core.framework.conf import SchedulerConf
from vc_sched_core.snapshot import ClusterSnapshot, load_snapshot

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vcctl sim cycle", description="What would the scheduler do with this cluster?")
    parser.add_argument("-f", "--filename", required=True, help="snapshot: multi-document YAML or a List")
    parser.add_argument("--conf", help="scheduler configuration (Volcano's YAML); default: the built-in one")
    parser.add_argument("--strict-conf", action="store_true", help="refuse a conf naming a Volcano plugin Tephra lacks")
    parser.add_argument("--cycles", type=int, default=1, help="number of cycles (decisions applied between)")
    parser.add_argument("-o", "--output", default="json", choices=["json"], help="output format")
    return parser


def simulate(snapshot: ClusterSnapshot, conf: SchedulerConf, *, cycles: int, now: datetime | None) -> dict[str, Any]:
    """Run `cycles` cycles; binds and evictions accumulate, pipelined and podgroups are the last ones."""
    binds: dict[str, str] = {}
    annotations: dict[str, dict[str, str]] = {}
    evictions: list[str] = []
    result = None
    for cycle in range(1, cycles + 1):
        result = run_cycle(snapshot, conf, now=now, session_uid=f"cycle-{cycle}")
        binds.update(result.binds)
        annotations.update(result.bind_annotations)
        evictions.extend(result.evictions)
        snapshot = apply_result(snapshot, result)
    podgroups = (
        {}
        if result is None
        else {
            key: {
                "phase": status.phase,
                "conditions": [
                    {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                    for c in status.conditions
                ],
            }
            for key, status in result.podgroups.items()
        }
    )
    pipelined = [] if result is None else list(result.pipelined)
    report = {"binds": binds, "evictions": evictions, "pipelined": pipelined, "podgroups": podgroups}
    if annotations:  # the annotations binds write (deviceshare's GPU assignment), only when some do
        report["bindAnnotations"] = annotations
    return report


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = _parser().parse_args(argv)
        if args.cycles < 1:
            raise _UsageError("--cycles must be at least 1")
        snapshot = load_snapshot(_read(args.filename, "snapshot"))
        conf = load_scheduler_conf(_read(args.conf, "conf") if args.conf else None, strict=args.strict_conf)
    except (_UsageError, InvalidObject, ConfigError, OSError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_BAD_INPUT
    for warning in conf.warnings():
        print(f"warning: scheduler conf: {warning}", file=err)
    report = simulate(snapshot, conf, cycles=args.cycles, now=datetime.now(UTC))
    out.write(msgspec.json.format(msgspec.json.encode(report), indent=2).decode() + "\n")
    return 0


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise OSError(f"cannot read {what} file {path}: {exc.strerror}") from exc

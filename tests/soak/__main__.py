"""`python -m tests.soak --minutes 60`: run the soak, print its figures, exit 1 on any growth beyond the bounds."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from tests.soak.run import Options, report, soak


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=60.0, help="how long the load runs (default 60)")
    parser.add_argument("--warmup-minutes", type=float, default=None, help="not judged (default: a sixth of the run)")
    parser.add_argument("--jobs-per-s", type=float, default=2.0)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--interval", type=float, default=15.0, help="seconds between samples")
    parser.add_argument("--keep", type=Path, default=None, help="keep logs and samples.json here")
    args = parser.parse_args(argv)
    if not 0 < args.minutes <= 120 or args.jobs_per_s <= 0 or not 1 <= args.nodes <= 200 or args.interval < 1:
        parser.error("--minutes must be in (0, 120], --jobs-per-s > 0, --nodes in [1, 200], --interval >= 1")
    warmup = args.warmup_minutes if args.warmup_minutes is not None else args.minutes / 6
    options = Options(
        minutes=args.minutes,
        warmup_minutes=warmup,
        jobs_per_s=args.jobs_per_s,
        nodes=args.nodes,
        interval_s=args.interval,
    )
    with tempfile.TemporaryDirectory(prefix="tephra-soak-") as tmp:
        root = args.keep or Path(tmp)
        growths, counts = asyncio.run(soak(root, options))
    text = report(growths, counts, options)
    print(text)
    return 1 if any(g.problems for g in growths) or counts.refused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

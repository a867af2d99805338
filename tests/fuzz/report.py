"""`python -m tests.fuzz.report FILE`: the fuzz tallies (JSON lines from `make fuzz`) as a Markdown table."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def table(lines: list[dict[str, object]]) -> str:
    rows = ["| surface | inputs | crashes | seconds sending | outcomes |", "|---|---:|---:|---:|---|"]
    for line in lines:
        outcomes = ", ".join(f"{k} {v}" for k, v in dict(line["outcomes"]).items())  # type: ignore[call-overload]
        rows.append(f"| {line['surface']} | {line['inputs']} | {line['crashes']} | {line['seconds']} | {outcomes} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    lines = [json.loads(text) for text in Path(argv[0]).read_text().splitlines() if text.strip()]
    print(table(lines))
    print(f"\nfuzz crashes: {sum(int(line['crashes']) for line in lines)}")
    return 1 if any(line["crashes"] for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

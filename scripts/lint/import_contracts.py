"""Check the import-linter layering contracts (pyproject.toml, [tool.importlinter]) with the import-linter
of .tools/lint (`make deps` installs it; requirements.txt beside this file says why it has a venv of its own).

The linter reads the sources, it imports none of them: it finds our packages through PYTHONPATH, set here to
every package's source folder. The exit status is the linter's (0: every contract kept).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINTER = ROOT / ".tools" / "lint" / "bin" / "lint-imports"


def source_folders() -> list[str]:
    return [
        str(ROOT / "proto" / "src"),
        *(str(p) for p in sorted(ROOT.glob("libs/*/src"))),
        *(str(p) for p in sorted(ROOT.glob("services/*/src"))),
    ]


def main() -> int:
    if not LINTER.exists():
        print(f"{LINTER.relative_to(ROOT)} is missing: run `make deps`", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(source_folders())}
    return subprocess.run([str(LINTER), "--no-logo", "--no-cache"], cwd=ROOT, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())

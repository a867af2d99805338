"""Reading one process: RSS and open file descriptors from /proc, asyncio tasks from its /metrics."""

from __future__ import annotations

import os
import re
import urllib.request
from pathlib import Path

_TASKS = re.compile(r"^tephra_asyncio_tasks (\S+)$", re.MULTILINE)


def rss_mib(pid: int) -> float:
    """Resident set size (VmRSS), MiB; raises OSError when the process is gone."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise OSError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def asyncio_tasks(health_port: int) -> int:
    """The service's `tephra_asyncio_tasks` gauge (reading /metrics makes it count)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{health_port}/metrics", timeout=10) as response:
        match = _TASKS.search(response.read().decode())
    if match is None:
        raise ValueError(f"no tephra_asyncio_tasks on port {health_port}")
    return int(float(match.group(1)))

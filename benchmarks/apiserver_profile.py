"""The kube-apiserver under the profiler: a Go CPU profile of a bench phase, and where its time went.

The apiserver serves its own pprof endpoints (`--profiling`, on by default) to a caller allowed the
non-resource URL /debug/pprof (the bench's admin token is; the bench's own client asks). `take` saves
one profile; `summary` reads it with `go tool pprof` when Go is installed (it is wherever the apiserver
was built from source) and says which share of the samples fell under each kind of work below
(cumulative: the kinds overlap).
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

from vc_kube.client import KubeClient

PROFILE_S = 15  # from the phase's first create: both systems' phases last longer here
# Kind of work -> the function whose cumulative share measures it (its closures, `.funcN`, count as it).
KINDS = {
    "PATCH": "handlers.(*patcher).patchResource",
    "pod status writes": "pod/storage.(*StatusREST).Update",
    "custom-resource status writes": "customresource.(*StatusREST).Update",
    "managedFields": "fieldmanager.(*FieldManager).Update",
    "creates": "handlers.createHandler",
    "bindings": "pod/storage.(*BindingREST).Create",
    "watches served": "handlers.serveWatch",
    "etcd events decoded": "etcd3.(*watchChan).processEvent",
    "garbage collection": "runtime.gcBgMarkWorker",
}
# A row of `go tool pprof -top -cum`: flat flat% sum% cum cum% name
_ROW = re.compile(r"^\s*\S+\s+\S+%\s+\S+%\s+\S+\s+([\d.]+)%\s+(.+?)\s*$")
_CLOSURE = re.compile(r"(\.func\d+)+(\.\d+)*$")


async def take(kube: KubeClient, out: Path, seconds: int = PROFILE_S) -> Path:
    """A CPU profile of the next `seconds`, saved to `out`."""
    data = await kube.request_bytes(
        "GET", "/debug/pprof/profile", query={"seconds": str(seconds)}, request_timeout_s=seconds + 30
    )
    await asyncio.to_thread(_save, out, data)
    return out


def _save(out: Path, data: bytes) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)


def shares(top: str) -> dict[str, float]:
    """Per kind of work, the cumulative percentage of samples, from `go tool pprof -top -cum` text."""
    cumulative: dict[str, float] = {}
    for line in top.splitlines():
        row = _ROW.match(line)
        if row:
            name = _CLOSURE.sub("", row.group(2))
            cumulative[name] = max(float(row.group(1)), cumulative.get(name, 0.0))
    found: dict[str, float] = {}
    for kind, function in KINDS.items():
        hits = [share for name, share in cumulative.items() if name.endswith(function)]
        if hits:
            found[kind] = max(hits)
    return found


async def summary(profile: Path) -> str:
    """'PATCH 42%, ...' for a saved profile; '' without Go or when pprof cannot read it."""
    go = shutil.which("go")
    if go is None:
        return ""
    proc = await asyncio.create_subprocess_exec(
        go, "tool", "pprof", "-top", "-cum", "-nodecount=5000", str(profile),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, _ = await proc.communicate()
    found = shares(out.decode(errors="replace"))
    return ", ".join(f"{kind} {share:.0f}%" for kind, share in found.items())

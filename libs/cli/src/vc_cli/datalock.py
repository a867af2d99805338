"""One `vcctl up` per data directory: an exclusive lock (flock) on DIR/lock.

Two nats-servers on one JetStream store corrupt it (reads come back wrong, acknowledged writes are
lost), so a second `vcctl up` on the same directory is refused, naming who holds it. The lock's file
descriptor is also inherited by the nats-server `vcctl up` starts: the directory stays locked until
both are gone, even when `vcctl up` itself was killed and its server is still shutting down.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from vc_cli.errors import CliError

LOCK_NAME = "lock"


@dataclass
class DataDirLock:
    path: Path
    fd: int

    def record(self, **pids: int | None) -> None:
        """Write who holds the lock (`vcctl-up=PID nats-server=PID`), for the next one refused."""
        text = " ".join(f"{name.replace('_', '-')}={pid}" for name, pid in pids.items() if pid) + "\n"
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, text.encode(), 0)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def lock_data_dir(data: Path) -> DataDirLock:
    try:
        data.mkdir(parents=True, exist_ok=True)
        fd = os.open(data / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise CliError(f"--data {data}: {exc.strerror or exc}", code=2) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        message = f"{data} is in use by another `vcctl up` ({holder}); stop it first, or choose another --data"
        raise CliError(message) from None
    lock = DataDirLock(data / LOCK_NAME, fd)
    lock.record(vcctl_up=os.getpid())
    return lock


def _holder(fd: int) -> str:
    """`pid 123` (and its nats-server's), as the holder recorded them, each marked when it is gone."""
    try:
        text = os.pread(fd, 256, 0).decode(errors="replace")
    except OSError:
        text = ""
    parts = []
    for item in text.split():
        name, _, pid = item.partition("=")
        if pid.isdigit():
            parts.append(f"{name} pid {pid}" + ("" if _alive(int(pid)) else " (gone)"))
    return ", ".join(parts) or "holder unknown"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recorded_pids(data: Path) -> dict[str, int]:
    """The pids the holder of DATA's lock recorded (`vcctl-up`, `nats-server`), whether or not it runs."""
    try:
        text = (data / LOCK_NAME).read_text(errors="replace")
    except OSError:
        return {}
    pids = {}
    for item in text.split():
        name, _, pid = item.partition("=")
        if pid.isdigit():
            pids[name] = int(pid)
    return pids


def is_locked(data: Path) -> bool:
    """Some `vcctl up` (or its nats-server) holds DATA now."""
    try:
        fd = os.open(data / LOCK_NAME, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False

"""A disk that can stall: an ext4 file system in a loop-mounted image, frozen with fsfreeze(8).

While frozen every write to it blocks in the kernel (and so does fsync), exactly as a stalled or
saturated device looks to nats-server; thawing lets them all complete. It needs root (mount, loop
devices, FIFREEZE), which this machine gives; `unavailable()` says why not elsewhere, and the fault
is then left out of the run (and the run says so).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("mkfs.ext4", "mount", "umount", "fsfreeze")
# Sparse: only what is written takes space. JetStream reserves the events stream's 4 GiB limit against
# 75% of the free space, so the file system must be well above that.
IMAGE_MB = 32 * 1024


def unavailable() -> str | None:
    """None when a stallable disk can be made here, else the reason."""
    if os.geteuid() != 0:
        return "needs root (mount a loop device, FIFREEZE)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"missing tools: {', '.join(missing)}"
    if not Path("/dev/loop-control").exists():
        return "no loop devices (/dev/loop-control)"
    return None


@dataclass
class StallableDisk:
    image: Path
    mountpoint: Path
    mounted: bool = False
    frozen: bool = False

    def mount(self) -> None:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        with self.image.open("wb") as f:
            f.truncate(IMAGE_MB * 1024 * 1024)
        _run("mkfs.ext4", "-q", "-F", str(self.image))
        _run("mount", "-o", "loop", str(self.image), str(self.mountpoint))
        self.mounted = True

    def freeze(self) -> None:
        _run("fsfreeze", "--freeze", str(self.mountpoint))
        self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            _run("fsfreeze", "--unfreeze", str(self.mountpoint))
            self.frozen = False

    def keep_copy(self, to: Path) -> None:
        """Copy what is on the disk (the NATS store) beside the run's logs, before it is unmounted."""
        if self.mounted:
            self.thaw()
            shutil.copytree(self.mountpoint, to, symlinks=True, dirs_exist_ok=True)

    def unmount(self) -> None:
        """Thaw and unmount (lazily if something still holds it); the loop device goes with it."""
        if not self.mounted:
            return
        try:
            self.thaw()
        finally:
            if subprocess.run(["umount", str(self.mountpoint)], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", str(self.mountpoint)], capture_output=True)
            self.mounted = False
            self.image.unlink(missing_ok=True)


def _run(*argv: str) -> None:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()}")

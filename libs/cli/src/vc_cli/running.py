"""Which data directory a running `vcctl up` on this machine serves, by its NATS port.

`vcctl up` leaves a note `<runtime dir>/vcctl-up-<port>` naming its data directory while it runs, so
`vcctl --server nats://127.0.0.1:<port> ...` finds that directory's admin credentials and CA whatever
the working directory. The note holds a path, nothing secret; the credentials stay in DATA/auth (0600).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import urlparse

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def runtime_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "tephra" if base else Path(f"/tmp/tephra-{os.getuid()}")


def note_path(port: int) -> Path:
    return runtime_dir() / f"vcctl-up-{port}"


def announce(port: int, data: Path) -> Path:
    directory = runtime_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if directory.stat().st_uid != os.getuid():
        raise PermissionError(f"{directory} belongs to another user")
    path = note_path(port)
    path.write_text(str(data.resolve()) + "\n")
    return path


def withdraw(port: int, data: Path) -> None:
    path = note_path(port)
    with contextlib.suppress(OSError):
        if path.read_text().strip() == str(data.resolve()):
            path.unlink()


def data_for(server: str) -> Path | None:
    """The data directory of the `vcctl up` serving `server` (a loopback URL), if one left a note."""
    for url in server.split(","):
        parsed = urlparse(url.strip())
        if parsed.hostname not in LOOPBACK or parsed.port is None:
            continue
        path = note_path(parsed.port)
        try:
            if path.stat().st_uid != os.getuid():
                continue
            data = Path(path.read_text().strip())
        except OSError:
            continue
        if data.is_dir():
            return data
    return None

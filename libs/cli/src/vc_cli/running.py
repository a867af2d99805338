"""Which data directory a running `vcctl up` on this machine serves, by its NATS port.

`vcctl up` leaves a note `<runtime dir>/vcctl-up-<port>` naming its data directory while it runs, so
`vcctl --server nats://127.0.0.1:<port> ...` finds that directory's admin credentials and CA whatever
the working directory, and `vcctl version` the version that system runs. The note holds a path and a
version, nothing secret; the credentials stay in DATA/auth (0600).
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


def announce(port: int, data: Path, version: str = "") -> Path:
    directory = runtime_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if directory.stat().st_uid != os.getuid():
        raise PermissionError(f"{directory} belongs to another user")
    path = note_path(port)
    path.write_text(str(data.resolve()) + "\n" + (f"version={version}\n" if version else ""))
    return path


def withdraw(port: int, data: Path) -> None:
    path = note_path(port)
    with contextlib.suppress(OSError):
        if _lines(path)[0] == str(data.resolve()):
            path.unlink()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() or [""]


def _note_for(server: str) -> list[str] | None:
    """The note of the `vcctl up` serving `server` (a loopback URL), if it left one and it is ours."""
    for url in server.split(","):
        parsed = urlparse(url.strip())
        if parsed.hostname not in LOOPBACK or parsed.port is None:
            continue
        path = note_path(parsed.port)
        try:
            if path.stat().st_uid != os.getuid():
                continue
            return _lines(path)
        except OSError:
            continue
    return None


def data_for(server: str) -> Path | None:
    """The data directory of the `vcctl up` serving `server` (a loopback URL), if one left a note."""
    note = _note_for(server)
    if note is None:
        return None
    data = Path(note[0].strip())
    return data if note[0].strip() and data.is_dir() else None


def version_for(server: str) -> str | None:
    """The Tephra version the `vcctl up` serving `server` runs, if it left a note saying so."""
    for line in _note_for(server) or []:
        key, sep, value = line.partition("=")
        if sep and key == "version":
            return value.strip() or None
    return None

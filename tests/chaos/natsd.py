"""The NATS side of a chaos run: one server, or three in a cluster on loopback (the production shape).

Each server is a real nats-server process with JetStream on its own file store. The harness kills
them (-9), pauses them (SIGSTOP), restarts them on the same store, and in default-fsync mode rolls a
store back to a copy taken earlier: what an OS crash loses when the last interval was never synced.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vc_bus.server import MAX_PAYLOAD_BYTES, find_nats_server, free_port

SyncMode = Literal["always", "default"]


@dataclass
class NatsNode:
    """One nats-server: its ports and store survive kills and restarts."""

    name: str
    root: Path
    sync: SyncMode
    port: int = field(default_factory=free_port)
    route_port: int = 0  # 0: not in a cluster
    routes: tuple[int, ...] = ()
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def store(self) -> Path:
        return self.root / "jetstream"

    @property
    def log_path(self) -> Path:
        return self.root / "nats-server.log"

    def config_text(self) -> str:
        lines = [
            f'server_name: "{self.name}"',
            f'listen: "127.0.0.1:{self.port}"',
            f"max_payload: {MAX_PAYLOAD_BYTES}",
            "jetstream {",
            f'  store_dir: "{self.store}"',
            *(["  sync_interval: always"] if self.sync == "always" else []),
            "}",
        ]
        if self.route_port:
            routes = ", ".join(f'"nats-route://127.0.0.1:{p}"' for p in self.routes)
            # no_advertise: clients use the server list they were given (and so a proxy in front of
            # one of them stays in the path), not addresses the cluster gossips to them.
            lines += [
                "cluster {",
                '  name: "chaos"',
                f'  listen: "127.0.0.1:{self.route_port}"',
                f"  routes: [{routes}]",
                "  no_advertise: true",
                "}",
            ]
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.store.mkdir(parents=True, exist_ok=True)
        conf = self.root / "nats-server.conf"
        conf.write_text(self.config_text())
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [find_nats_server(), "-c", str(conf)],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, sig)

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            os.kill(self.proc.pid, signal.SIGCONT)  # a paused server cannot act on SIGTERM
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def snapshot(self, to: Path) -> None:
        """Copy the store as it is on disk now, with the server paused so the copy is one instant."""
        self.signal(signal.SIGSTOP)
        try:
            shutil.copytree(self.store, to, symlinks=True)
        finally:
            self.signal(signal.SIGCONT)

    def restore(self, copy: Path) -> None:
        """Put a copy back in place of the store (the server must be down)."""
        assert not self.alive()
        for child in self.store.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        for child in copy.iterdir():
            target = self.store / child.name
            shutil.copytree(child, target, symlinks=True) if child.is_dir() else shutil.copy2(child, target)


class NatsTopology:
    """One server (`single`) or three in a cluster (`cluster`); `url` lists every server."""

    def __init__(self, root: Path, *, servers: int, sync: SyncMode) -> None:
        ports = [free_port() for _ in range(servers)]
        routes = [free_port() for _ in range(servers)] if servers > 1 else [0] * servers
        self.nodes = [
            NatsNode(
                f"n{i}",
                root / f"n{i}",
                sync,
                port=ports[i],
                route_port=routes[i],
                routes=tuple(p for j, p in enumerate(routes) if j != i) if servers > 1 else (),
            )
            for i in range(servers)
        ]
        self.replicas = 3 if servers >= 3 else 1
        self.sync = sync

    @property
    def url(self) -> str:
        return ",".join(n.url for n in self.nodes)

    def node(self, name: str) -> NatsNode:
        return next(n for n in self.nodes if n.name == name)

    def start(self) -> None:
        for node in self.nodes:
            node.start()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

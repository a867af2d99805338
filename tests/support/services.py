"""Run real Tephra service processes in tests: start, wait for /readyz, SIGTERM, SIGKILL, SIGSTOP."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import secure
from tests.support.waiting import eventually as eventually  # where the tests of processes import it from
from vc_bus.server import free_port

BIN = Path(sys.executable).parent


@dataclass
class ServiceProcess:
    binary: str
    nats_url: str
    args: list[str] = field(default_factory=list)
    log_path: Path | None = None
    health_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    module: str | None = None  # run `python -m module` (a test's own service) instead of the binary

    def start(self) -> ServiceProcess:
        self.health_port = free_port()
        # Each service connects as its own identity (a service's flags given in `args` win).
        bus = secure.current()
        identity = bus.identity_args(self.binary) if bus is not None and "--nats-creds" not in self.args else []
        argv = [
            *([sys.executable, "-m", self.module] if self.module else [str(BIN / self.binary)]),
            "--nats",
            self.nats_url,
            "--health-port",
            str(self.health_port),
            *identity,
            *self.args,
        ]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
        return self

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    async def wait_ready(self, timeout: float = 20.0) -> None:  # noqa: ASYNC109 - a poll's bound, as in eventually
        async def answers() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                log = self.log_text()[-2000:]
                raise AssertionError(f"{self.binary} exited with {self.proc.returncode}; log: {log}")
            return await asyncio.to_thread(self.ready)

        try:
            await eventually(answers, timeout=timeout, interval=0.05, what=f"{self.binary} ready")
        except AssertionError as exc:
            if self.proc is not None and self.proc.poll() is not None:
                raise
            raise AssertionError(f"{exc}; log: {self.log_text()[-2000:]}") from None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def terminate(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()

    def pause(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

"""Run real Tephra service processes in tests: start, wait for /readyz, SIGTERM, SIGKILL, SIGSTOP."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import secure
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

    def start(self) -> ServiceProcess:
        self.health_port = free_port()
        # Each service connects as its own identity (a service's flags given in `args` win).
        bus = secure.current()
        identity = bus.identity_args(self.binary) if bus is not None and "--nats-creds" not in self.args else []
        argv = [str(BIN / self.binary), "--nats", self.nats_url, "--health-port", str(self.health_port), *identity, *self.args]
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
        return self

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    async def wait_ready(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not await asyncio.to_thread(self.ready):
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.binary} exited with {self.proc.returncode}; log: {self.log_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.binary} not ready after {timeout}s; log: {self.log_text()[-2000:]}")
            await asyncio.sleep(0.05)

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


async def eventually(check: Callable[[], Awaitable[bool]], *, timeout: float = 30.0, interval: float = 0.1) -> None:
    """Poll an async condition until it holds; fail with a clear message after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)

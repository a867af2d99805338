"""The whole embedded system for integration tests: a real nats-server and every service as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tests.support.secure import SecureBus, session_bus
from tests.support.services import ServiceProcess, eventually
from vc_bus.connection import connect
from vc_bus.store import NatsStore
from vc_cli.client import Tephra
from vc_cli.up import ensure_default_queues
from vc_proto import api
from vc_proto.batch import Job

BIN = Path(sys.executable).parent
T = TypeVar("T")
SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"


class System:
    def __init__(
        self,
        root: Path,
        *,
        nodes: int = 4,
        node_gpu: str = "8",
        extra: dict[str, list[str]] | None = None,
        bus: SecureBus | None = None,
    ) -> None:
        self.root = root
        self.bus = bus or session_bus()
        self.server = self.bus.server(root / "nats")  # closed: identities and TLS, as `vcctl up` runs it
        self.nodes = nodes
        self.node_gpu = node_gpu
        self.extra = extra or {}
        self.services: dict[str, ServiceProcess] = {}

    @property
    def url(self) -> str:
        return self.server.url

    def service(self, name: str, binary: str, args: list[str]) -> ServiceProcess:
        argv = [*self.bus.identity_args(binary), *args, "--instance", name, *self.extra.get(name, [])]
        return ServiceProcess(binary, self.url, argv, self.root / f"{name}.log")

    async def start(self) -> None:
        self.server.start()
        await ensure_default_queues(self.url)
        plan = {
            "admission": ("vc-admission", ["--identities", str(self.bus.auth.registry_path)]),
            "queue-controller": ("vc-queue-controller", []),
            "podgroup-controller": ("vc-podgroup-controller", []),
            "job-controller": ("vc-job-controller", ["--lease-ttl", "2"]),
            "gc": ("vc-gc", []),
            "scheduler": ("vc-scheduler", ["--schedule-period", "0.5"]),
            "node-sim": (
                "vc-node-sim",
                ["--nodes", str(self.nodes), "--node-gpu", self.node_gpu, "--start-delay", "0.1"],
            ),
        }
        for name, (binary, args) in plan.items():
            self.services[name] = self.service(name, binary, args).start()
        for service in self.services.values():
            await service.wait_ready(timeout=60)

    def stop(self) -> None:
        for service in self.services.values():
            service.stop_quietly()
        self.server.stop()

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{s.log_text()[-3000:]}" for n, s in self.services.items())

    def vcctl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "VC_SERVER": self.url, **self.bus.admin_env()}  # the admin, as `make run` gives it
        return subprocess.run(
            [str(BIN / "vcctl"), *args], capture_output=True, text=True, env=env, input=stdin, timeout=60
        )

    def submit(self, document: dict[str, Any]) -> None:
        """`vcctl apply -f -` as the admin: a vcctl process (about a second of CPU)."""
        result = self.vcctl("apply", "-f", "-", stdin=yaml.safe_dump(document))
        assert result.returncode == 0, result.stderr

    async def apply(self, document: dict[str, Any]) -> None:
        """The write `submit` makes (an Apply through admission, as the admin), from the test's process."""
        async with connect(self.url, name="test") as nc:
            await Tephra(nc).submit(api.Apply, document)

    async def store_call(self, fn: Callable[[NatsStore], Awaitable[T]]) -> T:
        async with connect(self.url, name="test") as nc:
            return await fn(NatsStore(nc))

    async def job(self, name: str, namespace: str = "default") -> Job:
        return await self.store_call(lambda s: s.get(Job, namespace, name))

    async def job_phase(self, name: str) -> str:
        job = await self.job(name)
        return (job.status.state.phase if job.status and job.status.state else None) or ""

    async def wait_phase(self, name: str, phase: str, timeout: float = 45) -> None:  # noqa: ASYNC109 - a poll's bound
        async def reached() -> bool:
            return await self.job_phase(name) == phase

        try:
            await eventually(reached, timeout=timeout, interval=0.2)
        except AssertionError as exc:
            raise AssertionError(f"job {name} is {await self.job_phase(name)!r}, not {phase!r}\n{self.logs()}") from exc

    def history(self, name: str) -> list[dict[str, Any]]:
        out = self.vcctl("job", "history", "-N", name, "-o", "json")
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def seed(
    name: str, *, durations: dict[str, str] | None = None, exit_codes: dict[str, int] | None = None
) -> dict[str, Any]:
    """A seed job with simulated run times per task (annotations on each task's template)."""
    document: dict[str, Any] = yaml.safe_load((SEEDS / name).read_text())
    for task in document["spec"]["tasks"]:
        annotations = task["template"].setdefault("metadata", {}).setdefault("annotations", {})
        if durations and task["name"] in durations:
            annotations["sim.tephra.dev/duration"] = durations[task["name"]]
        if exit_codes and task["name"] in exit_codes:
            annotations["sim.tephra.dev/exit-code"] = str(exit_codes[task["name"]])
    return document


async def start_system(root: Path, **kwargs: Any) -> System:
    system = System(root, **kwargs)
    try:
        await system.start()
    except BaseException:
        system.stop()
        raise
    return system

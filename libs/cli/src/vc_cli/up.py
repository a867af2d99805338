"""`vcctl up`: run the whole embedded system in the foreground.

Starts nats-server (JetStream, file storage under --data), then every service as its own OS process,
waits until each reports ready on /readyz, makes sure the `default` queue exists and prints `ready`.
A service that dies is restarted with backoff, as Kubernetes would; so is nats-server, on its own file
store (services reconnect by themselves), and when it cannot be restarted `vcctl up` exits non-zero
saying why. SIGINT/SIGTERM stops the services (schedulers and controllers first, node-sim and admission
last), then NATS; exit 0. Every child dies with `vcctl up`, even when it is killed with SIGKILL
(PR_SET_PDEATHSIG), and the data directory is locked, so two never share one store (`datalock.py`).

The bus is closed: DATA/auth holds a throwaway CA and nats-server's certificate, one NKey identity
per service and `admin` (vc_security.authdir), and nats-server admits only those, each to its own
subjects, over TLS. Every child connects with its own credentials; `vcctl` run from the same tree
finds the admin's by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from vc_bus.connection import connect
from vc_bus.server import NatsServer, NatsServerError, die_with_parent, free_port, port_in_use, reserve_ports
from vc_bus.store import NatsStore
from vc_cli import running
from vc_cli.datalock import DataDirLock, lock_data_dir
from vc_cli.errors import CliError
from vc_cli.progress import StartupProgress
from vc_cli.service_logs import KEEP, MAX_BYTES, RotatingLog, copy_to, logs_dir
from vc_cli.terminal import unescaped
from vc_cli.up_webhooks import UpWebhooks
from vc_core.errors import AlreadyExists, InvalidObject, NotFound
from vc_core.quantity import parse_quantity
from vc_proto.meta import ObjectMeta
from vc_proto.scheduling import SCHEDULING_V1BETA1, Queue, QueueSpec, QueueStatus
from vc_security.authdir import AuthDir
from vc_security.credentials import BadCredentials
from vc_security.identities import ADMIN, Backend
from vc_validation.simulation import parse_sim_duration

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
# nats-server restarted more often than this within a minute is not coming back by itself.
NATS_QUICK_RESTARTS = 5
MAX_NODES = 100_000  # node-sim's own bound
DASHBOARD_PORT = 8090  # vc-dashboard's own default: `make run` prints the same URL every time it can
# --metrics-port-base N: each child's health/metrics port is N + its place here; scheduler-i's is
# N + len(METRICS_PORT_ORDER) + i. A child that is not started (kube-relay without --backend kube,
# node-sim with --nodes 0) keeps its place, so every other port is the same whatever the flags.
METRICS_PORT_ORDER = (
    "admission",
    "queue-controller",
    "podgroup-controller",
    "job-controller",
    "gc",
    "node-sim",
    "vc-dashboard",
    "kube-relay",
    "flow-controller",
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    up = sub.add_parser("up", help="run the embedded system (NATS, every service, simulated nodes) in the foreground")
    up.add_argument(
        "--data",
        default=".data",
        help="state directory: NATS file storage, and every service's log in DATA/logs/<service>.log "
        f"(rotated at {MAX_BYTES // (1024 * 1024)} MiB, {KEEP} old files kept; nats-server's in DATA/nats)",
    )
    up.add_argument(
        "--log-to-terminal",
        action="store_true",
        help="the services' JSON logs on this terminal's stderr instead of in DATA/logs",
    )
    up.add_argument("--nats-port", type=int, default=4222)
    up.add_argument(
        "--nodes", type=int, default=None, help="simulated nodes (default 4; with --backend kube, none unless given)"
    )
    up.add_argument("--node-cpu", default="32")
    up.add_argument("--node-memory", default="256Gi")
    up.add_argument("--node-gpu", default="8")
    up.add_argument("--node-pods", default="110")
    up.add_argument(
        "--vgpus-per-node",
        type=int,
        default=0,
        help="node-sim: shareable GPUs per node, as Volcano's vGPU device plugin registers them (deviceshare)",
    )
    up.add_argument("--vgpu-memory", type=int, default=16384, help="node-sim: MiB of memory per shareable GPU")
    up.add_argument("--vgpu-split", type=int, default=10, help="node-sim: pods that may share one GPU")
    up.add_argument("--scheduler-replicas", type=int, default=1)
    up.add_argument("--scheduler-conf")
    up.add_argument("--backend", choices=["nats", "kube"], default="nats")
    up.add_argument("--kubeconfig")
    up.add_argument(
        "--sync",
        choices=["always", "default"],
        default="always",
        help="JetStream fsync: 'always' (nothing acknowledged is lost on an OS crash) or the server default",
    )
    up.add_argument("--default-duration", help="node-sim: run time of pods without the duration annotation")
    up.add_argument(
        "--dashboard-port",
        type=int,
        default=None,
        help=f"the web dashboard's port (default {DASHBOARD_PORT}, or a free one when that is taken)",
    )
    up.add_argument(
        "--metrics-port-base",
        type=int,
        default=None,
        metavar="N",
        help="fixed health/metrics ports from N on, in this order: "
        + ", ".join(f"{name} N+{i}" for i, name in enumerate(METRICS_PORT_ORDER))
        + f", scheduler-i N+{len(METRICS_PORT_ORDER)}+i (default: any free ports)",
    )


@dataclass
class Child:
    name: str
    argv: list[str]
    health_port: int
    proc: asyncio.subprocess.Process | None = None
    restarts: int = 0
    started_at: float = field(default=0.0)
    url: str = ""  # what the child serves to people (the dashboard), printed before `ready`
    log: RotatingLog | None = None  # its log file; None: it writes to this terminal's stderr
    # Copies its output into `log` until it exits; owned here, awaited before a restart and at stop.
    _copying: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.log_done()
        output = asyncio.subprocess.PIPE if self.log is not None else None
        # SIGKILL if `vcctl up` dies: a service holds nothing that a crash could lose.
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=asyncio.subprocess.STDOUT if self.log is not None else None,
            start_new_session=True,
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
        if self.log is not None and self.proc.stdout is not None:
            self._copying = asyncio.create_task(copy_to(self.proc.stdout, self.log), name=f"log {self.name}")
        self.started_at = time.monotonic()

    async def log_done(self) -> None:
        """Wait until everything the ended process wrote is in its log."""
        copying, self._copying = self._copying, None
        if copying is not None:
            await copying

    def failure_hint(self) -> str:
        """Where to look when it fails: the end of its log file, or the log lines above."""
        if self.log is None:
            return "see its log lines above"
        tail = "\n  ".join(self.log.tail(10))
        return f"see {self.log.path}" + (f"; it ends with:\n  {tail}" if tail else "")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False


def _bin(name: str) -> str:
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise CliError(f"{name} is not installed next to vcctl ({path}); run `make deps`")
    return str(path)


def identity_args(auth: AuthDir | None, binary: str) -> list[str]:
    """The flags that make a child connect as its own identity (`vc-X` is identity `X`)."""
    if auth is None:
        return []
    identity = binary.removeprefix("vc-")
    return ["--nats-creds", str(auth.creds_path(identity)), "--nats-ca", str(auth.ca_path)]


def metrics_port(base: int, name: str) -> int:
    """The health/metrics port of child `name` under --metrics-port-base `base` (METRICS_PORT_ORDER)."""
    if name.startswith("scheduler-"):
        return base + len(METRICS_PORT_ORDER) + int(name.removeprefix("scheduler-"))
    return base + METRICS_PORT_ORDER.index(name)


def metrics_port_span(replicas: int) -> int:
    """How many ports from --metrics-port-base on `vcctl up` may use."""
    return len(METRICS_PORT_ORDER) + replicas


def child_names(args: argparse.Namespace) -> list[str]:
    """The children `vcctl up` starts with these flags, in start order."""
    names = ["kube-relay"] if args.backend == "kube" else []
    names += ["admission", "queue-controller", "podgroup-controller", "job-controller", "gc", "flow-controller"]
    names += [f"scheduler-{i}" for i in range(args.scheduler_replicas)]
    if _node_count(args) > 0:
        names.append("node-sim")
    return [*names, "vc-dashboard"]


def _node_count(args: argparse.Namespace) -> int:
    return int(args.nodes if args.nodes is not None else (0 if args.backend == "kube" else 4))


def plan_children(
    args: argparse.Namespace, nats_url: str, auth: AuthDir | None = None, webhooks: UpWebhooks | None = None
) -> list[Child]:
    common = ["--nats", nats_url, "--backend", args.backend] + (
        ["--kubeconfig", args.kubeconfig] if args.kubeconfig else []
    )
    base = getattr(args, "metrics_port_base", None)

    def child(name: str, binary: str, extra: list[str]) -> Child:
        port = free_port() if base is None else metrics_port(base, name)
        argv = [
            _bin(binary),
            *common,
            *identity_args(auth, binary),
            "--health-port",
            str(port),
            "--instance",
            name,
            *extra,
        ]
        return Child(name, argv, port)

    children = [child("kube-relay", "vc-kube-relay", [])] if args.backend == "kube" else []
    admission = ["--identities", str(auth.registry_path)] if auth else []
    children.append(child("admission", "vc-admission", admission + (webhooks.admission_args() if webhooks else [])))
    for name in ("queue-controller", "podgroup-controller", "job-controller", "gc", "flow-controller"):
        children.append(child(name, f"vc-{name}", []))
    conf = ["--scheduler-conf", args.scheduler_conf] if args.scheduler_conf else []
    for i in range(args.scheduler_replicas):
        children.append(child(f"scheduler-{i}", "vc-scheduler", conf))
    nodes = _node_count(args)
    if nodes > 0:
        sim = [
            "--nodes",
            str(nodes),
            "--node-cpu",
            args.node_cpu,
            "--node-memory",
            args.node_memory,
            "--node-gpu",
            args.node_gpu,
            "--node-pods",
            args.node_pods,
        ]
        if args.default_duration:
            sim += ["--default-duration", args.default_duration]
        vgpus = getattr(args, "vgpus_per_node", 0)
        if vgpus:
            sim += ["--vgpus-per-node", str(vgpus), "--vgpu-memory", str(args.vgpu_memory)]
            sim += ["--vgpu-split", str(args.vgpu_split)]
        children.append(child("node-sim", "vc-node-sim", sim))
    children.append(dashboard_child(args, child, auth))
    return children


def dashboard_child(
    args: argparse.Namespace, child: Callable[[str, str, list[str]], Child], auth: AuthDir | None = None
) -> Child:
    """vc-dashboard on --dashboard-port, else on DASHBOARD_PORT when free (a stable URL), else on any free
    port; its logins are vcctl's identities (`vcctl user token`)."""
    port = getattr(args, "dashboard_port", None)
    if port is None:
        port = free_port() if port_in_use(DASHBOARD_PORT) else DASHBOARD_PORT
    logins = []
    if auth is not None:
        admin_key = auth.credentials(ADMIN).key.public_key
        logins = ["--identities", str(auth.registry_path), "--admin-key", admin_key]
    dashboard = child("vc-dashboard", "vc-dashboard", ["--http-host", "127.0.0.1", "--http-port", str(port), *logins])
    dashboard.url = f"http://127.0.0.1:{port}/"
    return dashboard


async def install_crds(kubeconfig: str | None) -> None:
    """--backend kube: Tephra's CRDs (generated from proto/) are installed when missing or drifted."""
    from vc_kube.client import KubeClient
    from vc_kube.crds import ensure_crds

    try:
        async with await KubeClient.connect(kubeconfig) as kube:
            await ensure_crds(kube)
    except Exception as exc:  # any failure to reach or use the API server ends `up` with its reason
        raise CliError(
            f"cannot install Tephra's CRDs on the API server ({kubeconfig or '$KUBECONFIG'}): {exc}"
        ) from exc


async def ensure_default_queues(url: str, auth: AuthDir | None = None) -> None:
    """`root` and `default`, written as the queue-controller (the identity that keeps them; it would
    make them itself a moment later) before any service starts, so `ready` means they exist."""
    credentials = auth.credentials("queue-controller") if auth is not None else None
    async with connect(url, name="vcctl-up", credentials=credentials) as nc:
        store = NatsStore(nc)
        await store.ensure()
        for name, reclaimable in (("root", False), ("default", True)):
            spec = QueueSpec(weight=1, reclaimable=reclaimable, parent=None if name == "root" else "root")
            try:
                await store.create(
                    Queue(
                        api_version=SCHEDULING_V1BETA1,
                        metadata=ObjectMeta(name=name),
                        spec=spec,
                        status=QueueStatus(state="Open"),
                    )
                )
            except AlreadyExists:
                pass


async def _wait_default_queues(url: str, auth: AuthDir | None, stop: asyncio.Event) -> None:
    """With `--backend kube` the queue-controller makes `root` and `default` on the API server and the
    relay brings them to the store admission reads: `ready` waits for them there, or a job submitted
    at once would be refused for a queue that is about to exist."""
    credentials = auth.credentials("queue-controller") if auth is not None else None
    deadline = time.monotonic() + READY_TIMEOUT_S
    async with connect(url, name="vcctl-up", credentials=credentials) as nc:
        store = NatsStore(nc)
        while not stop.is_set():
            try:
                for name in ("root", "default"):
                    await store.get(Queue, None, name)
                return
            except NotFound as exc:
                if time.monotonic() > deadline:
                    raise CliError(
                        "the default queues did not appear within 90 s (see the queue-controller's log)"
                    ) from exc
            await asyncio.sleep(0.2)  # the relay writes them once the queue-controller made them


def check_arguments(args: argparse.Namespace) -> None:
    """Every flag's value, before anything starts: one line and exit 2 for a bad one."""
    if not 1 <= args.scheduler_replicas <= 16:
        raise CliError("--scheduler-replicas must be between 1 and 16", code=2)
    if not 0 <= args.nats_port <= 65535:
        raise CliError("--nats-port must be between 0 and 65535", code=2)
    if args.nodes is not None and not 0 <= args.nodes <= MAX_NODES:
        raise CliError(f"--nodes must be between 0 and {MAX_NODES:,}", code=2)
    for flag in ("node_cpu", "node_memory", "node_gpu", "node_pods"):
        name = "--" + flag.replace("_", "-")
        try:
            amount = parse_quantity(getattr(args, flag), field=name)
        except InvalidObject as exc:
            raise CliError(f"{name}: {exc.message}", code=2) from exc
        if amount < 0 or (flag != "node_memory" and amount.denominator != 1):
            raise CliError(f"{name} must be a whole number of at least 0", code=2)
    if not 0 <= getattr(args, "vgpus_per_node", 0) <= 64:
        raise CliError("--vgpus-per-node must be between 0 and 64", code=2)
    if getattr(args, "vgpu_memory", 1) < 1 or getattr(args, "vgpu_split", 1) < 1:
        raise CliError("--vgpu-memory and --vgpu-split must be at least 1", code=2)
    if args.default_duration:
        try:
            parse_sim_duration(args.default_duration, path="--default-duration")
        except InvalidObject as exc:
            raise CliError(f"--default-duration: {exc.message}", code=2) from exc
    if args.scheduler_conf and not Path(args.scheduler_conf).is_file():
        raise CliError(f"--scheduler-conf {args.scheduler_conf}: no such file", code=2)
    dashboard = getattr(args, "dashboard_port", None)
    if dashboard is not None and not 1 <= dashboard <= 65535:
        raise CliError("--dashboard-port must be between 1 and 65535", code=2)
    base = getattr(args, "metrics_port_base", None)
    if base is not None:
        last = base + metrics_port_span(args.scheduler_replicas) - 1
        if not 1 <= base or last > 65535:
            span = metrics_port_span(args.scheduler_replicas)
            raise CliError(
                f"--metrics-port-base must be between 1 and {65536 - span} (it uses {span} ports from N on)", code=2
            )
        ports = {metrics_port(base, name): name for name in child_names(args)}
        for port, what in ((args.nats_port, "--nats-port"), (dashboard, "--dashboard-port")):
            if port in ports:
                raise CliError(
                    f"{what} {port} is {ports[port]}'s metrics port under --metrics-port-base {base}; "
                    "choose other ports",
                    code=2,
                )


def check_ports_free(args: argparse.Namespace) -> None:
    """Every fixed port `vcctl up` was asked for, free before anything starts (one clear line if not), and
    kept from the ports it picks for the rest (a service's health port drawn at random could be one)."""
    dashboard = getattr(args, "dashboard_port", None)
    reserve_ports(args.nats_port, dashboard)
    if dashboard is not None and port_in_use(dashboard):
        raise CliError(f"port {dashboard} (--dashboard-port) is already in use; choose another --dashboard-port")
    base = getattr(args, "metrics_port_base", None)
    if base is None:
        return
    for name in child_names(args):
        port = metrics_port(base, name)
        if port_in_use(port):
            raise CliError(
                f"port {port} ({name}'s health/metrics port: --metrics-port-base {base} + {port - base}) "
                "is already in use; choose another --metrics-port-base"
            )


def data_dir(args: argparse.Namespace) -> Path:
    """--data as an absolute path (resolved once, before anything runs: the notes and logs name it)."""
    return Path(args.data).resolve()


async def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    data = data_dir(args)
    lock = lock_data_dir(data)
    try:
        if port_in_use(args.nats_port):
            raise CliError(f"port {args.nats_port} is already in use (is Tephra already running? choose --nats-port)")
        check_ports_free(args)
        progress = StartupProgress(unescaped(sys.stderr))
        progress.stage("starting nats-server")
        auth = secure_bus(data, args.backend)
        server = NatsServer(
            data / "nats",
            port=args.nats_port,
            sync=args.sync,
            exit_with_parent=True,
            keep_fds=(lock.fd,),
            security=INCLUDE_AUTH,
            tls=True,
        )
        try:
            server.start()
        except NatsServerError as exc:
            progress.clear()
            raise CliError(f"nats-server failed to start: {exc}") from exc
        try:
            lock.record(vcctl_up=os.getpid(), nats_server=server.pid)
            with contextlib.suppress(OSError):  # only a convenience for vcctl (running.py)
                running.announce(server.port, data, version=tephra_version())
            return await _supervise(args, NatsWatch(server, lock), auth, data, progress)
        finally:
            progress.clear()
            running.withdraw(server.port, data)
            server.stop()
    finally:
        lock.release()


def tephra_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("vc-cli")
    except metadata.PackageNotFoundError:
        return ""


def secure_bus(data: Path, backend: Backend) -> AuthDir:
    """DATA/auth made complete (whatever is missing is made) and nats-server's part written from it."""
    auth = AuthDir(data / "auth")
    try:
        auth.ensure(backend)
        auth.write_server_config(backend)
    except (OSError, BadCredentials, ValueError) as exc:
        raise CliError(f"cannot prepare NATS credentials in {auth.root}: {exc}") from exc
    return auth


# nats-server reads DATA/auth/server-auth.conf (a path relative to its own configuration file), so
# `vcctl user create` can change it and have the running server reload it.
INCLUDE_AUTH = 'include "../auth/server-auth.conf"\n'


@dataclass
class NatsWatch:
    """nats-server as a supervised child: restarted on its own store when it dies, within limits."""

    server: NatsServer
    lock: DataDirLock
    restarts: int = 0
    started_at: float = field(default_factory=time.monotonic)

    def check(self) -> None:
        """Restart the server if it has ended; CliError when it cannot be (or keeps dying)."""
        code = self.server.exit_code()
        if code is None:
            return
        now = time.monotonic()
        self.restarts = self.restarts + 1 if now - self.started_at < 60 else 1
        if self.restarts > NATS_QUICK_RESTARTS:
            raise CliError(
                f"nats-server keeps exiting (exit code {code}, {self.restarts} times in a minute); "
                f"see {self.server.log_path}"
            )
        _log_event("child.restarting", child="nats-server", exit_code=code, restarts=self.restarts)
        try:
            self.server.start()  # blocks until it serves again; nothing else can work meanwhile anyway
        except NatsServerError as exc:
            raise CliError(f"nats-server exited (exit code {code}) and could not be restarted: {exc}") from exc
        self.started_at = now
        self.lock.record(vcctl_up=os.getpid(), nats_server=self.server.pid)


def _log_event(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), file=sys.stderr, flush=True)


async def _supervise(
    args: argparse.Namespace, nats: NatsWatch, auth: AuthDir, data: Path, progress: StartupProgress | None = None
) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    server = nats.server
    progress = progress or StartupProgress(unescaped(sys.stderr))
    webhooks: UpWebhooks | None = None
    if args.backend == "kube":
        kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG")
        progress.stage("installing Tephra's CRDs")
        await install_crds(kubeconfig)
        webhooks = UpWebhooks(kubeconfig, free_port())
        await _remove_webhooks(webhooks, "stale")  # an earlier run's, before anything is written
    else:
        progress.stage("creating the default queues")
        await ensure_default_queues(server.url, auth)  # with kube, the queue-controller creates them there
    children = plan_children(args, server.url, auth, webhooks)
    if not getattr(args, "log_to_terminal", True):
        for c in children:
            c.log = RotatingLog(logs_dir(data) / f"{c.name}.log")
    try:
        for c in children:
            await c.start()
        try:
            await _wait_ready(children, nats, stop, progress)
            if webhooks is not None and not stop.is_set():
                progress.stage("waiting for the default queues")
                await _wait_default_queues(server.url, auth, stop)
                progress.stage("registering admission's webhooks")
                await webhooks.register()
        finally:
            progress.clear()
        if stop.is_set():
            return 0
        _announce(server, children, data, auth)
        await _keep_alive(children, nats, stop)
        return 0
    finally:
        if webhooks is not None:  # before admission stops: a webhook that fails closed must not outlive it
            await _remove_webhooks(webhooks, "stopping")
        await _stop_all(children)
        for c in children:
            await c.log_done()
            if c.log is not None:
                c.log.close()


async def _remove_webhooks(webhooks: UpWebhooks, why: str) -> None:
    """A failure is logged, not raised: starting or stopping goes on (the next start tries again)."""
    try:
        removed = await webhooks.remove()
    except CliError as exc:
        _log_event("webhooks.remove_failed", why=why, error=str(exc))
        return
    if removed:
        _log_event("webhooks.removed", why=why, names=removed)


async def _wait_ready(
    children: list[Child], nats: NatsWatch, stop: asyncio.Event, progress: StartupProgress | None = None
) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    pending = list(children)
    while pending and not stop.is_set():
        if progress is not None:
            progress.services([c.name for c in children if c not in pending], [c.name for c in pending])
        nats.check()
        for c in list(pending):
            if c.proc is not None and c.proc.returncode is not None:
                await c.log_done()
                raise CliError(f"{c.name} failed to start (exit code {c.proc.returncode}); {c.failure_hint()}")
            if await asyncio.to_thread(c.ready):
                pending.remove(c)
        if time.monotonic() > deadline:
            raise CliError("not ready after 90 s: " + ", ".join(c.name for c in pending))
        await asyncio.sleep(0.1)


def _announce(server: NatsServer, children: list[Child], data: Path, auth: AuthDir | None = None) -> None:
    url = f"nats://{server.host}:{server.port}"
    if auth is None:
        print(f"nats:    {url} (JetStream data in {data / 'nats'})", flush=True)
    else:  # the server requires TLS whatever the scheme; tls:// makes a client refuse plain text
        print(f"nats:    {url} (TLS and credentials required; JetStream data in {data / 'nats'})", flush=True)
        print(
            f"admin:   {auth.creds_path('admin')} and CA {auth.ca_path} (vcctl on this machine finds them)", flush=True
        )
    for c in children:
        print(f"{c.name + ':':<21}http://127.0.0.1:{c.health_port}/metrics", flush=True)
    logged = [c.log.path.parent for c in children if c.log is not None]
    if logged:
        print(f"logs:    {logged[0]}/<service>.log (vcctl up --log-to-terminal shows them here)", flush=True)
    for c in children:
        if c.url:
            print("dashboard login: a token from `vcctl user token` (on its login page, or as a bearer token)")
            print(f"dashboard: {c.url}", flush=True)
    print("ready", flush=True)


async def _keep_alive(children: list[Child], nats: NatsWatch, stop: asyncio.Event) -> None:
    while not stop.is_set():
        nats.check()
        for c in children:
            if c.proc is not None and c.proc.returncode is not None:
                c.restarts += 1
                delay = min(2.0 ** min(c.restarts, 5), 30.0) if time.monotonic() - c.started_at < 60 else 1.0
                _log_event("child.restarting", child=c.name, exit_code=c.proc.returncode, delay_s=delay)
                await asyncio.sleep(delay)
                await c.start()
        try:
            async with asyncio.timeout(0.5):
                await stop.wait()
        except TimeoutError:
            pass


async def _stop_all(children: list[Child]) -> None:
    """Controllers and schedulers first, then node-sim and admission, so no work is cut in half."""
    order = sorted(children, key=lambda c: c.name in ("node-sim", "admission", "kube-relay"))
    last = ("node-sim", "admission", "kube-relay")
    for group in ([c for c in order if c.name not in last], [c for c in order if c.name in last]):
        running = [c.proc for c in group if c.proc is not None and c.proc.returncode is None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        for proc in running:
            try:
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()

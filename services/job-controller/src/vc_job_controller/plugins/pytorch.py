"""pytorch plugin (Volcano `distributed-framework/pytorch`): torch.distributed rendezvous env.

Every container gets MASTER_ADDR (`<job>-<master>-0.<job>`), MASTER_PORT, WORLD_SIZE
(= replicas of master + worker) and RANK (0 for the master, index+1 for workers) and the port
`pytorchjob-port`; with `-wait-master-enabled`, workers get an init container that waits for the
master's port. Nothing happens when the job has no master task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from msgspec.structs import replace

from vc_job_controller.logic import names
from vc_job_controller.logic.view import find_task, replicas, task_name, tasks
from vc_job_controller.plugins.flags import Flag, parse_flags, require_bool, require_int, require_port, require_text
from vc_job_controller.plugins.interface import (
    NO_EFFECTS,
    PluginDeps,
    PluginEffects,
    PluginError,
    mark_added,
    mark_deleted,
)
from vc_job_controller.plugins.podedit import append_env, edit_containers, open_port, pod_task, spec_of
from vc_proto.batch import Job, JobSpec, TaskSpec
from vc_proto.core import Container, EnvVar, Pod

NAME: Final = "pytorch"
PORT_NAME: Final = "pytorchjob-port"
WAIT_CONTAINER: Final = "wait-for-master"
FLAGS: Final = (
    Flag("master", "master"),
    Flag("worker", "worker"),
    Flag("port", 23456),
    Flag("wait-master-enabled", False),
    Flag("wait-master-timeout", 300),
    Flag("wait-master-image", "busybox:1.36.1"),
)


def master_address(job: Job, master: TaskSpec) -> str:
    pod_spec = master.template.spec if master.template else None
    return names.host_name(
        job=job.metadata.name or "",
        task=task_name(master),
        index=0,
        hostname=pod_spec.hostname if pod_spec else None,
        subdomain=pod_spec.subdomain if pod_spec else None,
    )


def wait_script(address: str, port: int, timeout: int) -> str:
    """The shell loop of Volcano's generateWaitForMasterScript."""
    return "\n".join(
        [
            f'echo "Waiting for master node {address}:{port} to be ready..."',
            f"TIMEOUT={timeout}",
            "ELAPSED=0",
            f"until {{ nc -z {address} {port} || echo > /dev/tcp/{address}/{port}; }} 2>/dev/null; do",
            "  if [ $ELAPSED -ge $TIMEOUT ]; then",
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"',
            "    exit 1",
            "  fi",
            '  echo "Master not ready yet, retrying in 2 seconds... (elapsed: ${ELAPSED}s)"',
            "  sleep 2",
            "  ELAPSED=$((ELAPSED + 2))",
            "done",
            'echo "Master node is ready!"',
        ]
    )


class PytorchPlugin:
    name: Final = NAME

    def __init__(self, *, master: str, worker: str, port: int, wait_image: str | None, wait_timeout: int) -> None:
        self.master = master
        self.worker = worker
        self.port = port
        self.wait_image = wait_image
        self.wait_timeout = wait_timeout

    def world_size(self, job: Job) -> int:
        return sum(replicas(t) for t in tasks(job.spec or JobSpec()) if task_name(t) in (self.master, self.worker))

    def rank(self, pod: Pod) -> str | None:
        task = pod_task(pod)
        if task == self.worker:
            index = names.task_index_of(pod.metadata.name or "")
            if not index.isdigit():
                raise PluginError(NAME, f"pod {pod.metadata.name} has no task index")
            return str(int(index) + 1)
        return "0" if task == self.master else None

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        master = find_task(job.spec or JobSpec(), self.master)
        if master is None:
            return pod
        address = master_address(job, master)
        env = [
            EnvVar(name="MASTER_ADDR", value=address),
            EnvVar(name="MASTER_PORT", value=str(self.port)),
            EnvVar(name="WORLD_SIZE", value=str(self.world_size(job))),
        ]
        rank = self.rank(pod)
        if rank is not None:
            env.append(EnvVar(name="RANK", value=rank))
        if pod_task(pod) == self.worker:
            pod = self.add_wait_for_master(pod, address)
        pod = edit_containers(pod, open_port(self.port, PORT_NAME), init=False)
        return edit_containers(pod, append_env(env), init=False)

    def add_wait_for_master(self, pod: Pod, address: str) -> Pod:
        spec = spec_of(pod)
        if self.wait_image is None or any(c.name == WAIT_CONTAINER for c in spec.init_containers or []):
            return pod
        command = ["sh", "-c", wait_script(address, self.port, self.wait_timeout)]
        waiter = Container(name=WAIT_CONTAINER, image=self.wait_image, command=command)
        return replace(pod, spec=replace(spec, init_containers=[*(spec.init_containers or []), waiter]))

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_added(NAME, controlled)

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_deleted(NAME, controlled)

    def on_job_update(self, job: Job) -> PluginEffects:
        return NO_EFFECTS


def build(args: Sequence[str], deps: PluginDeps) -> PytorchPlugin:
    values = parse_flags(NAME, args, FLAGS)
    timeout = require_int(values["wait-master-timeout"])
    if timeout <= 0:
        raise PluginError(NAME, f"-wait-master-timeout={timeout} must be a positive number of seconds")
    enabled = require_bool(values["wait-master-enabled"])
    return PytorchPlugin(
        master=require_text(NAME, "master", values["master"]),
        worker=require_text(NAME, "worker", values["worker"]),
        port=require_port(NAME, "port", values["port"]),
        wait_image=require_text(NAME, "wait-master-image", values["wait-master-image"]) if enabled else None,
        wait_timeout=timeout,
    )

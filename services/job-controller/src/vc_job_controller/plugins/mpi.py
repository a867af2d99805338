"""mpi plugin (Volcano `distributed-framework/mpi`): MPI_HOST on the master, the ssh port everywhere.

Master pods get `MPI_HOST` = the worker task's hosts comma-joined; every container and init
container gets port `mpijob-port` (default 22) unless it already exposes that number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from vc_job_controller.logic import names
from vc_job_controller.logic.view import find_task, replicas
from vc_job_controller.plugins.flags import Flag, parse_flags, require_port, require_text
from vc_job_controller.plugins.interface import NO_EFFECTS, PluginDeps, PluginEffects, mark_added, mark_deleted
from vc_job_controller.plugins.podedit import append_env, edit_containers, open_port, pod_task
from vc_proto.batch import Job, JobSpec, TaskSpec
from vc_proto.core import EnvVar, Pod

NAME: Final = "mpi"
MPI_HOST: Final = "MPI_HOST"
PORT_NAME: Final = "mpijob-port"
FLAGS: Final = (Flag("master", "master"), Flag("worker", "worker"), Flag("port", 22))


def task_hosts(job: Job, task: TaskSpec) -> str:
    """Volcano's generateTaskHosts: comma-joined `<host>.<subdomain>`, one entry for a pinned hostname."""
    pod_spec = task.template.spec if task.template else None
    hostname = pod_spec.hostname if pod_spec else None
    subdomain = pod_spec.subdomain if pod_spec else None
    count = min(1, replicas(task)) if hostname else replicas(task)
    job_name = job.metadata.name or ""
    return ",".join(
        names.host_name(job=job_name, task=task.name or "", index=i, hostname=hostname, subdomain=subdomain)
        for i in range(count)
    )


class MpiPlugin:
    name: Final = NAME

    def __init__(self, *, master: str, worker: str, port: int) -> None:
        self.master = master
        self.worker = worker
        self.port = port

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        if pod_task(pod) == self.master:
            worker = find_task(job.spec or JobSpec(), self.worker)
            if worker is None:
                # Volcano returns before opening ports when the worker task is missing.
                return pod
            pod = edit_containers(pod, append_env([EnvVar(name=MPI_HOST, value=task_hosts(job, worker))]))
        return edit_containers(pod, open_port(self.port, PORT_NAME))

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_added(NAME, controlled)

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_deleted(NAME, controlled)

    def on_job_update(self, job: Job) -> PluginEffects:
        return NO_EFFECTS


def build(args: Sequence[str], deps: PluginDeps) -> MpiPlugin:
    values = parse_flags(NAME, args, FLAGS)
    return MpiPlugin(
        master=require_text(NAME, "master", values["master"]),
        worker=require_text(NAME, "worker", values["worker"]),
        port=require_port(NAME, "port", values["port"]),
    )

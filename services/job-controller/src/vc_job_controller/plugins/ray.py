"""ray plugin (Volcano `distributed-framework/ray`): a Ray cluster from a head task and a worker task.

The head task's head container runs `ray start --head ...` and exposes the gcs, dashboard and
client-server ports; the worker task's worker container runs `ray start --address=<head>:<port>`;
Service `<job>-head-svc` fronts the head. A job without the head task fails with a PluginError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from msgspec.structs import replace

from vc_job_controller.logic import names
from vc_job_controller.logic.ownership import owned_meta
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, WriteMode
from vc_job_controller.logic.view import find_task
from vc_job_controller.plugins.flags import Flag, parse_flags, require_port, require_text
from vc_job_controller.plugins.interface import (
    NO_EFFECTS,
    PluginDeps,
    PluginEffects,
    PluginError,
    controlled_key,
    mark_deleted,
)
from vc_job_controller.plugins.podedit import open_port, pod_task, spec_of
from vc_proto.batch import Job, JobSpec, TaskSpec
from vc_proto.core import CORE_V1, Container, Pod, Service, ServicePort, ServiceSpec
from vc_proto.vocabulary import JOB_NAME_KEY, JOB_NAMESPACE_KEY, TASK_SPEC_KEY

NAME: Final = "ray"
GCS: Final = "gcs"
DASHBOARD: Final = "dashboard"
CLIENT_SERVER: Final = "client-server"
ROLES: Final = ("head", "headContainer", "worker", "workerContainer")
FLAGS: Final = (
    Flag("head", "head"),
    Flag("headContainer", "head"),
    Flag("worker", "worker"),
    Flag("workerContainer", "worker"),
    Flag("port", 6379),
    Flag("dashboardPort", 8265),
    Flag("clientPort", 10001),
)


def head_service_name(job: Job) -> str:
    return names.with_suffix(job.metadata.name or "", "-head-svc")


def head_address(job: Job, head: TaskSpec) -> str:
    pod_spec = head.template.spec if head.template else None
    return names.host_name(
        job=job.metadata.name or "",
        task=head.name or "",
        index=0,
        hostname=pod_spec.hostname if pod_spec else None,
        subdomain=pod_spec.subdomain if pod_spec else None,
    )


class RayPlugin:
    name: Final = NAME

    def __init__(self, *, roles: Mapping[str, str], ports: Mapping[str, int]) -> None:
        # roles: head, headContainer, worker, workerContainer; ports: gcs, dashboard, client-server
        self.roles = roles
        self.ports = ports

    def head_task(self, job: Job) -> TaskSpec:
        head = find_task(job.spec or JobSpec(), self.roles["head"])
        if head is None:
            raise PluginError(NAME, f"job {job.metadata.name} doesn't have head task {self.roles['head']}")
        return head

    def _head_container(self, container: Container) -> Container:
        for port_name in (GCS, DASHBOARD, CLIENT_SERVER):
            container = open_port(self.ports[port_name], port_name)(container)
        command = (
            f"ray start --head --block --dashboard-host=0.0.0.0 --port={self.ports[GCS]} "
            f"--dashboard-port={self.ports[DASHBOARD]} --ray-client-server-port={self.ports[CLIENT_SERVER]}"
        )
        return replace(container, command=["sh", "-c", command])

    def _worker_container(self, container: Container, job: Job) -> Container:
        endpoint = f"{head_address(job, self.head_task(job))}:{self.ports[GCS]}"
        return replace(container, command=["sh", "-c", f"ray start --block --address={endpoint}"])

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        self.head_task(job)
        task, spec = pod_task(pod), spec_of(pod)
        containers = []
        for container in spec.containers or []:
            if task == self.roles["head"] and container.name == self.roles["headContainer"]:
                container = self._head_container(container)
            elif task == self.roles["worker"] and container.name == self.roles["workerContainer"]:
                container = self._worker_container(container, job)
            containers.append(container)
        return replace(pod, spec=replace(spec, containers=containers or spec.containers))

    def head_service(self, job: Job) -> Service:
        selector = {
            JOB_NAME_KEY: job.metadata.name or "",
            JOB_NAMESPACE_KEY: job.metadata.namespace or "",
            TASK_SPEC_KEY: self.roles["head"],
        }
        ports = [
            ServicePort(name=name, port=self.ports[name], target_port=name, protocol="TCP")
            for name in (GCS, DASHBOARD, CLIENT_SERVER)
        ]
        spec = ServiceSpec(selector=selector, ports=ports)
        return Service(api_version=CORE_V1, metadata=owned_meta(job, head_service_name(job)), spec=spec)

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        if controlled.get(controlled_key(NAME)) == NAME:
            return NO_EFFECTS
        write = ObjectWrite(obj=self.head_service(job), mode=WriteMode.CREATE_IF_ABSENT)
        return PluginEffects(writes=(write,), controlled_set={controlled_key(NAME): NAME})

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_deleted(NAME, controlled, deletes=(ObjectRef(kind="Service", name=head_service_name(job)),))

    def on_job_update(self, job: Job) -> PluginEffects:
        return NO_EFFECTS


def build(args: Sequence[str], deps: PluginDeps) -> RayPlugin:
    values = parse_flags(NAME, args, FLAGS)
    roles = {
        role: require_text(NAME, role, values[role]) for role in ("head", "headContainer", "worker", "workerContainer")
    }
    ports = {
        GCS: require_port(NAME, "port", values["port"]),
        DASHBOARD: require_port(NAME, "dashboardPort", values["dashboardPort"]),
        CLIENT_SERVER: require_port(NAME, "clientPort", values["clientPort"]),
    }
    return RayPlugin(roles=roles, ports=ports)

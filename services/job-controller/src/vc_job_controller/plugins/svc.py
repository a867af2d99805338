"""svc plugin (Volcano `plugins/svc`): pods find each other by name.

On job add: ConfigMap `<job>-svc` with, per task T (`t` = T with `-` -> `_`), `<t>.host` (hosts one a
line), `VC_<T>_HOSTS` (comma-joined) and `VC_<T>_NUM`; headless Service `<job>`; NetworkPolicy `<job>`
(ingress only from the job's pods) unless `-disable-network-policy`. On pod create: hostname/subdomain,
`VC_<T>_HOSTS`/`VC_<T>_NUM` env from the ConfigMap (unless `-inject-hosts-env=false`), and the ConfigMap
mounted at /etc/volcano.

Tephra addition (asked for by Volcano's users): `-service-type=NodePort|LoadBalancer|ClusterIP` also
creates a Service `<job>-<type>` reachable from outside the headless DNS, on `-port=N` (with
`-node-port=N`) or `-ports=8080,9090:30090` (`port[:nodePort]`), defaulting to the containers' ports;
`-service-task=T` narrows it to one task's pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from vc_proto.batch import Job
from vc_proto.core import (
    CORE_V1,
    NETWORKING_V1,
    ConfigMap,
    ConfigMapVolumeSource,
    EnvVar,
    NetworkPolicy,
    NetworkPolicySpec,
    Pod,
    Service,
    ServicePort,
    ServiceSpec,
    Volume,
    VolumeMount,
)
from vc_proto.meta import LabelSelector
from vc_proto.vocabulary import JOB_NAME_KEY, JOB_NAMESPACE_KEY, TASK_SPEC_KEY

from vc_job_controller.logic import names
from vc_job_controller.logic.ownership import owned_meta
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, WriteMode
from vc_job_controller.logic.view import replicas, task_name, tasks
from vc_job_controller.plugins.flags import Flag, parse_flags, require_bool, require_int, require_text
from vc_job_controller.plugins.interface import (
    PluginDeps,
    PluginEffects,
    PluginError,
    controlled_key,
    mark_deleted,
)
from vc_job_controller.plugins.podedit import add_volume, append_env, append_mount, edit_containers, spec_of

NAME: Final = "svc"
CONFIGMAP_MOUNT_PATH: Final = "/etc/volcano"
SERVICE_TYPES: Final = ("ClusterIP", "NodePort", "LoadBalancer")
NODE_PORT_RANGE: Final = range(30000, 32768)
FLAGS: Final = (
    Flag("publish-not-ready-addresses", False),
    Flag("disable-network-policy", False),
    Flag("inject-hosts-env", True),
    Flag("service-type", ""),
    Flag("port", 0),
    Flag("node-port", 0),
    Flag("ports", ""),
    Flag("service-task", ""),
)

PortPair = tuple[int, int | None]


@dataclass(frozen=True, slots=True)
class Exposure:
    """Tephra's extra Service: its type, (port, nodePort) pairs (empty = the containers' ports), task."""

    service_type: str
    ports: tuple[PortPair, ...]
    task: str


def env_key(task: str) -> str:
    return task.replace("-", "_")


def generate_hosts(job: Job) -> dict[str, str]:
    """Volcano's GenerateHosts: the ConfigMap data."""
    data: dict[str, str] = {}
    for task in tasks(job.spec or _no_spec()):
        hosts = task_hosts(job, task_name(task))
        key = env_key(task_name(task))
        data[f"{key}.host"] = "\n".join(hosts)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return data


def task_hosts(job: Job, task: str) -> list[str]:
    """`<hostname or pod>.<subdomain or job>` per replica; one entry when the template pins a hostname."""
    spec = next((t for t in tasks(job.spec or _no_spec()) if task_name(t) == task), None)
    if spec is None:
        return []
    pod_spec = spec.template.spec if spec.template and spec.template.spec else None
    hostname = pod_spec.hostname if pod_spec else None
    subdomain = pod_spec.subdomain if pod_spec else None
    count = 1 if hostname else replicas(spec)
    job_name = job.metadata.name or ""
    return [
        names.host_name(job=job_name, task=task, index=i, hostname=hostname, subdomain=subdomain)
        for i in range(min(count, replicas(spec)))
    ]


def _no_spec() -> object:
    from vc_proto.batch import JobSpec

    return JobSpec()

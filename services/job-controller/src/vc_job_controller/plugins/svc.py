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

from msgspec.structs import replace

from vc_job_controller.logic import names
from vc_job_controller.logic.ownership import owned_meta
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, WriteMode
from vc_job_controller.logic.view import find_task, replicas, task_name, tasks
from vc_job_controller.plugins.flags import Flag, parse_flags, require_bool
from vc_job_controller.plugins.interface import (
    PluginDeps,
    PluginEffects,
    PluginError,
    controlled_key,
    mark_deleted,
)
from vc_job_controller.plugins.podedit import add_volume, append_env, append_mount, edit_containers, spec_of
from vc_proto.batch import Job, JobSpec
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
    for task in tasks(job.spec or JobSpec()):
        hosts = task_hosts(job, task_name(task))
        key = env_key(task_name(task))
        data[f"{key}.host"] = "\n".join(hosts)
        data[f"VC_{key.upper()}_HOSTS"] = ",".join(hosts)
        data[f"VC_{key.upper()}_NUM"] = str(len(hosts))
    return data


def task_hosts(job: Job, task: str) -> list[str]:
    """`<hostname or pod>.<subdomain or job>` per replica; one entry when the template pins a hostname."""
    spec = find_task(job.spec or JobSpec(), task)
    if spec is None or replicas(spec) == 0:
        return []
    pod_spec = spec.template.spec if spec.template else None
    hostname = pod_spec.hostname if pod_spec else None
    subdomain = pod_spec.subdomain if pod_spec else None
    count = 1 if hostname else replicas(spec)
    job_name = job.metadata.name or ""
    return [
        names.host_name(job=job_name, task=task, index=i, hostname=hostname, subdomain=subdomain) for i in range(count)
    ]


def job_selector(job: Job) -> dict[str, str]:
    return {JOB_NAME_KEY: job.metadata.name or "", JOB_NAMESPACE_KEY: job.metadata.namespace or ""}


def hosts_configmap(job: Job) -> ConfigMap:
    name = names.hosts_configmap_name(job.metadata.name or "")
    return ConfigMap(api_version=CORE_V1, metadata=owned_meta(job, name), data=generate_hosts(job))


def headless_service(job: Job, *, publish_not_ready: bool) -> Service:
    spec = ServiceSpec(cluster_ip="None", selector=job_selector(job), publish_not_ready_addresses=publish_not_ready)
    name = names.service_name(job.metadata.name or "")
    return Service(api_version=CORE_V1, metadata=owned_meta(job, name), spec=spec)


def network_policy(job: Job) -> NetworkPolicy:
    """Ingress only from pods of the same job (Volcano's createNetworkPolicyIfNotExist)."""
    selector = LabelSelector(match_labels=job_selector(job))
    spec = NetworkPolicySpec(
        pod_selector=selector,
        ingress=[{"from": [{"podSelector": {"matchLabels": job_selector(job)}}]}],
        policy_types=["Ingress"],
    )
    name = names.network_policy_name(job.metadata.name or "")
    return NetworkPolicy(api_version=NETWORKING_V1, metadata=owned_meta(job, name), spec=spec)


def exposed_service_name(job: Job, service_type: str) -> str:
    return names.with_suffix(job.metadata.name or "", f"-{service_type.lower()}")


def container_ports(job: Job, task: str) -> tuple[PortPair, ...]:
    """Every distinct container port of the job's (or one task's) templates, in spec order."""
    seen: dict[int, None] = {}
    for spec in tasks(job.spec or JobSpec()):
        if task and task_name(spec) != task:
            continue
        pod_spec = spec.template.spec if spec.template else None
        for container in (pod_spec.containers if pod_spec else None) or []:
            for port in container.ports or []:
                seen.setdefault(port.container_port, None)
    return tuple((port, None) for port in seen)


def exposed_service(job: Job, exposure: Exposure) -> Service:
    if exposure.task and find_task(job.spec or JobSpec(), exposure.task) is None:
        raise PluginError(NAME, f"-service-task={exposure.task} names no task of the job")
    pairs = exposure.ports or container_ports(job, exposure.task)
    if not pairs:
        raise PluginError(
            NAME, f"-service-type={exposure.service_type} needs -port or -ports: the job's containers declare no ports"
        )
    ports = [
        ServicePort(name=f"port-{port}", port=port, target_port=port, node_port=node_port, protocol="TCP")
        for port, node_port in pairs
    ]
    selector = job_selector(job)
    if exposure.task:
        selector[TASK_SPEC_KEY] = exposure.task
    spec = ServiceSpec(type=exposure.service_type, selector=selector, ports=ports)
    name = exposed_service_name(job, exposure.service_type)
    return Service(api_version=CORE_V1, metadata=owned_meta(job, name), spec=spec)


class SvcPlugin:
    name: Final = NAME

    def __init__(
        self,
        *,
        publish_not_ready: bool,
        disable_network_policy: bool,
        inject_hosts_env: bool,
        exposure: Exposure | None,
    ) -> None:
        self.publish_not_ready = publish_not_ready
        self.disable_network_policy = disable_network_policy
        self.inject_hosts_env = inject_hosts_env
        self.exposure = exposure

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        spec = spec_of(pod)
        hostname = spec.hostname or pod.metadata.name
        subdomain = spec.subdomain or names.service_name(job.metadata.name or "")
        pod = replace(pod, spec=replace(spec, hostname=hostname, subdomain=subdomain))
        if self.inject_hosts_env:
            pod = edit_containers(pod, append_env(self._hosts_env(job)))
        return self._mount_hosts(pod, job)

    def _hosts_env(self, job: Job) -> list[EnvVar]:
        configmap = names.hosts_configmap_name(job.metadata.name or "")
        env: list[EnvVar] = []
        for task in tasks(job.spec or JobSpec()):
            key = env_key(task_name(task)).upper()
            for var in (f"VC_{key}_HOSTS", f"VC_{key}_NUM"):
                ref = {"configMapKeyRef": {"name": configmap, "key": var}}
                env.append(EnvVar(name=var, value_from=ref))
        return env

    def _mount_hosts(self, pod: Pod, job: Job) -> Pod:
        configmap = names.hosts_configmap_name(job.metadata.name or "")
        volume = Volume(name=configmap, config_map=ConfigMapVolumeSource(name=configmap))
        pod = add_volume(pod, volume)
        return edit_containers(pod, append_mount(VolumeMount(name=configmap, mount_path=CONFIGMAP_MOUNT_PATH)))

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        if controlled.get(controlled_key(NAME)) == NAME:
            return PluginEffects()
        writes = [
            ObjectWrite(obj=hosts_configmap(job), mode=WriteMode.CREATE_OR_UPDATE),
            ObjectWrite(
                obj=headless_service(job, publish_not_ready=self.publish_not_ready), mode=WriteMode.CREATE_IF_ABSENT
            ),
        ]
        if not self.disable_network_policy:
            writes.append(ObjectWrite(obj=network_policy(job), mode=WriteMode.CREATE_IF_ABSENT))
        if self.exposure is not None:
            writes.append(ObjectWrite(obj=exposed_service(job, self.exposure), mode=WriteMode.CREATE_IF_ABSENT))
        return PluginEffects(writes=tuple(writes), controlled_set={controlled_key(NAME): NAME})

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        job_name = job.metadata.name or ""
        deletes = [
            ObjectRef(kind="ConfigMap", name=names.hosts_configmap_name(job_name)),
            ObjectRef(kind="Service", name=names.service_name(job_name)),
        ]
        if not self.disable_network_policy:
            deletes.append(ObjectRef(kind="NetworkPolicy", name=names.network_policy_name(job_name)))
        if self.exposure is not None:
            deletes.append(ObjectRef(kind="Service", name=exposed_service_name(job, self.exposure.service_type)))
        return mark_deleted(NAME, controlled, deletes=tuple(deletes))

    def on_job_update(self, job: Job) -> PluginEffects:
        # Replicas may have changed: rewrite the host lists (Volcano's OnJobUpdate).
        return PluginEffects(writes=(ObjectWrite(obj=hosts_configmap(job), mode=WriteMode.CREATE_OR_UPDATE),))


def parse_port_list(text: str) -> tuple[PortPair, ...]:
    """`8080,9090:30090` -> ((8080, None), (9090, 30090))."""
    pairs: list[PortPair] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        port_text, _, node_text = item.partition(":")
        try:
            port = int(port_text)
            node_port = int(node_text) if node_text else None
        except ValueError:
            raise PluginError(NAME, f"-ports entry {item!r} is not port[:nodePort]") from None
        pairs.append((check_port(port), check_node_port(node_port)))
    return tuple(pairs)


def check_port(port: int) -> int:
    if not 1 <= port <= 65535:
        raise PluginError(NAME, f"port {port} is out of range 1-65535")
    return port


def check_node_port(node_port: int | None) -> int | None:
    if node_port is not None and node_port not in NODE_PORT_RANGE:
        raise PluginError(NAME, f"node port {node_port} is outside 30000-32767")
    return node_port


def parse_exposure(values: Mapping[str, object]) -> Exposure | None:
    """Tephra's `-service-type` option, validated; None when not asked for."""
    service_type, task = str(values["service-type"]), str(values["service-task"])
    port, node_port, port_list = int(str(values["port"])), int(str(values["node-port"])), str(values["ports"])
    if not service_type:
        if port or node_port or port_list or task:
            raise PluginError(NAME, "-port, -node-port, -ports and -service-task need -service-type")
        return None
    if service_type not in SERVICE_TYPES:
        raise PluginError(NAME, f"-service-type={service_type} is not one of {', '.join(SERVICE_TYPES)}")
    if port_list and (port or node_port):
        raise PluginError(NAME, "give either -ports or -port/-node-port, not both")
    if node_port and not port:
        raise PluginError(NAME, "-node-port needs -port (the port it forwards to)")
    pairs = parse_port_list(port_list) if port_list else single_port(port, node_port)
    if service_type == "ClusterIP" and any(n is not None for _, n in pairs):
        raise PluginError(NAME, "node ports need -service-type=NodePort or LoadBalancer")
    return Exposure(service_type=service_type, ports=pairs, task=task)


def single_port(port: int, node_port: int) -> tuple[PortPair, ...]:
    if not port:
        return ()
    return ((check_port(port), check_node_port(node_port or None)),)


def build(args: Sequence[str], deps: PluginDeps) -> SvcPlugin:
    values = parse_flags(NAME, args, FLAGS)
    return SvcPlugin(
        publish_not_ready=require_bool(values["publish-not-ready-addresses"]),
        disable_network_policy=require_bool(values["disable-network-policy"]),
        inject_hosts_env=require_bool(values["inject-hosts-env"]),
        exposure=parse_exposure(values),
    )

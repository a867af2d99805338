"""Core v1 objects Tephra reads and writes: Pod, Node, Service, ConfigMap, Secret, ResourceQuota,
PersistentVolumeClaim, PersistentVolume; and PriorityClass.

Every top-level field of PodSpec and Container is declared so that a template round-trips verbatim;
the deep parts Tephra does not interpret (probes, security contexts, volume sources...) are `Raw`.
"""

from __future__ import annotations

from typing import Final

import msgspec

from vc_proto.base import IntOrString, Raw, ResourceList, Wire
from vc_proto.meta import LabelSelector, ObjectMeta

CORE_V1: Final = "v1"
SCHEDULING_K8S_V1: Final = "scheduling.k8s.io/v1"
NETWORKING_V1: Final = "networking.k8s.io/v1"


class ResourceRequirements(Wire, frozen=True, kw_only=True):
    limits: ResourceList | None = None
    requests: ResourceList | None = None
    claims: list[Raw] | None = None


class ContainerPort(Wire, frozen=True, kw_only=True):
    container_port: int
    name: str | None = None
    protocol: str | None = None
    host_port: int | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")


class EnvVar(Wire, frozen=True, kw_only=True):
    name: str
    value: str | None = None
    value_from: Raw | None = None


class VolumeMount(Wire, frozen=True, kw_only=True):
    name: str
    mount_path: str
    read_only: bool | None = None
    sub_path: str | None = None
    sub_path_expr: str | None = None
    mount_propagation: str | None = None
    recursive_read_only: str | None = None


class Container(Wire, frozen=True, kw_only=True):
    name: str
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    working_dir: str | None = None
    ports: list[ContainerPort] | None = None
    env_from: list[Raw] | None = None
    env: list[EnvVar] | None = None
    resources: ResourceRequirements | None = None
    resize_policy: list[Raw] | None = None
    restart_policy: str | None = None
    restart_policy_rules: list[Raw] | None = None
    volume_mounts: list[VolumeMount] | None = None
    volume_devices: list[Raw] | None = None
    liveness_probe: Raw | None = None
    readiness_probe: Raw | None = None
    startup_probe: Raw | None = None
    lifecycle: Raw | None = None
    termination_message_path: str | None = None
    termination_message_policy: str | None = None
    image_pull_policy: str | None = None
    security_context: Raw | None = None
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None


class KeyToPath(Wire, frozen=True, kw_only=True):
    key: str
    path: str
    mode: int | None = None


class ConfigMapVolumeSource(Wire, frozen=True, kw_only=True):
    name: str | None = None
    items: list[KeyToPath] | None = None
    default_mode: int | None = None
    optional: bool | None = None


class SecretVolumeSource(Wire, frozen=True, kw_only=True):
    secret_name: str | None = None
    items: list[KeyToPath] | None = None
    default_mode: int | None = None
    optional: bool | None = None


class Volume(Wire, frozen=True, kw_only=True):
    """A pod volume: the two sources Tephra's plugins write are typed, every other source is Raw."""

    name: str
    config_map: ConfigMapVolumeSource | None = None
    secret: SecretVolumeSource | None = None
    persistent_volume_claim: Raw | None = None
    empty_dir: Raw | None = None
    host_path: Raw | None = None
    projected: Raw | None = None
    downward_api: Raw | None = msgspec.field(default=None, name="downwardAPI")
    ephemeral: Raw | None = None
    csi: Raw | None = None
    nfs: Raw | None = None
    image: Raw | None = None
    iscsi: Raw | None = None
    rbd: Raw | None = None
    cephfs: Raw | None = None
    glusterfs: Raw | None = None
    fc: Raw | None = None
    flex_volume: Raw | None = None
    flocker: Raw | None = None
    git_repo: Raw | None = None
    aws_elastic_block_store: Raw | None = msgspec.field(default=None, name="awsElasticBlockStore")
    azure_disk: Raw | None = None
    azure_file: Raw | None = None
    cinder: Raw | None = None
    gce_persistent_disk: Raw | None = None
    photon_persistent_disk: Raw | None = None
    portworx_volume: Raw | None = None
    quobyte: Raw | None = None
    scale_io: Raw | None = msgspec.field(default=None, name="scaleIO")
    storageos: Raw | None = None
    vsphere_volume: Raw | None = None


class Toleration(Wire, frozen=True, kw_only=True):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class PodSpec(Wire, frozen=True, kw_only=True):
    containers: list[Container] | None = None
    init_containers: list[Container] | None = None
    ephemeral_containers: list[Raw] | None = None
    volumes: list[Volume] | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    dns_policy: str | None = None
    dns_config: Raw | None = None
    node_selector: dict[str, str] | None = None
    service_account_name: str | None = None
    service_account: str | None = None
    automount_service_account_token: bool | None = None
    node_name: str | None = None
    host_network: bool | None = None
    host_pid: bool | None = msgspec.field(default=None, name="hostPID")
    host_ipc: bool | None = msgspec.field(default=None, name="hostIPC")
    host_users: bool | None = None
    share_process_namespace: bool | None = None
    security_context: Raw | None = None
    image_pull_secrets: list[Raw] | None = None
    hostname: str | None = None
    hostname_override: str | None = None
    subdomain: str | None = None
    set_hostname_as_fqdn: bool | None = msgspec.field(default=None, name="setHostnameAsFQDN")
    affinity: Raw | None = None
    scheduler_name: str | None = None
    tolerations: list[Toleration] | None = None
    host_aliases: list[Raw] | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    preemption_policy: str | None = None
    readiness_gates: list[Raw] | None = None
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    overhead: ResourceList | None = None
    topology_spread_constraints: list[Raw] | None = None
    os: Raw | None = None
    scheduling_gates: list[Raw] | None = None
    resource_claims: list[Raw] | None = None
    resources: ResourceRequirements | None = None


class PodTemplateSpec(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None


class PodCondition(Wire, frozen=True, kw_only=True):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_probe_time: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None


class ContainerStateTerminated(Wire, frozen=True, kw_only=True):
    exit_code: int
    reason: str | None = None
    message: str | None = None
    signal: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    container_id: str | None = msgspec.field(default=None, name="containerID")


class ContainerState(Wire, frozen=True, kw_only=True):
    waiting: Raw | None = None
    running: Raw | None = None
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(Wire, frozen=True, kw_only=True):
    name: str
    ready: bool = False
    restart_count: int = 0
    image: str | None = None
    image_id: str | None = msgspec.field(default=None, name="imageID")
    container_id: str | None = msgspec.field(default=None, name="containerID")
    started: bool | None = None
    state: ContainerState | None = None
    last_state: ContainerState | None = None
    allocated_resources: ResourceList | None = None
    resources: Raw | None = None
    volume_mounts: list[Raw] | None = None
    user: Raw | None = None
    allocated_resources_status: list[Raw] | None = None
    stop_signal: str | None = None


class PodStatus(Wire, frozen=True, kw_only=True):
    phase: str | None = None
    conditions: list[PodCondition] | None = None
    message: str | None = None
    reason: str | None = None
    nominated_node_name: str | None = None
    host_ip: str | None = msgspec.field(default=None, name="hostIP")
    host_ips: list[Raw] | None = msgspec.field(default=None, name="hostIPs")
    pod_ip: str | None = msgspec.field(default=None, name="podIP")
    pod_ips: list[Raw] | None = msgspec.field(default=None, name="podIPs")
    start_time: str | None = None
    init_container_statuses: list[ContainerStatus] | None = None
    container_statuses: list[ContainerStatus] | None = None
    ephemeral_container_statuses: list[ContainerStatus] | None = None
    qos_class: str | None = msgspec.field(default=None, name="qosClass")
    resize: str | None = None
    resource_claim_statuses: list[Raw] | None = None
    observed_generation: int | None = None


class Pod(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Pod"):
    api_version: str
    metadata: ObjectMeta
    spec: PodSpec | None = None
    status: PodStatus | None = None


class Taint(Wire, frozen=True, kw_only=True):
    key: str
    effect: str
    value: str | None = None
    time_added: str | None = None


class NodeSpec(Wire, frozen=True, kw_only=True):
    pod_cidr: str | None = msgspec.field(default=None, name="podCIDR")
    pod_cidrs: list[str] | None = msgspec.field(default=None, name="podCIDRs")
    provider_id: str | None = msgspec.field(default=None, name="providerID")
    unschedulable: bool | None = None
    taints: list[Taint] | None = None
    config_source: Raw | None = None
    external_id: str | None = msgspec.field(default=None, name="externalID")


class NodeCondition(Wire, frozen=True, kw_only=True):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_heartbeat_time: str | None = None
    last_transition_time: str | None = None


class NodeStatus(Wire, frozen=True, kw_only=True):
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    phase: str | None = None
    conditions: list[NodeCondition] | None = None
    addresses: list[Raw] | None = None
    daemon_endpoints: Raw | None = None
    node_info: Raw | None = None
    images: list[Raw] | None = None
    volumes_in_use: list[str] | None = None
    volumes_attached: list[Raw] | None = None
    config: Raw | None = None
    runtime_handlers: list[Raw] | None = None
    features: Raw | None = None
    declared_features: list[str] | None = None


class Node(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Node"):
    api_version: str
    metadata: ObjectMeta
    spec: NodeSpec | None = None
    status: NodeStatus | None = None


class ServicePort(Wire, frozen=True, kw_only=True):
    port: int
    name: str | None = None
    protocol: str | None = None
    target_port: IntOrString | None = None
    node_port: int | None = None
    app_protocol: str | None = None


class ServiceSpec(Wire, frozen=True, kw_only=True):
    type: str | None = None
    selector: dict[str, str] | None = None
    ports: list[ServicePort] | None = None
    cluster_ip: str | None = msgspec.field(default=None, name="clusterIP")
    cluster_ips: list[str] | None = msgspec.field(default=None, name="clusterIPs")
    publish_not_ready_addresses: bool | None = None
    external_ips: list[str] | None = msgspec.field(default=None, name="externalIPs")
    external_name: str | None = None
    external_traffic_policy: str | None = None
    internal_traffic_policy: str | None = None
    session_affinity: str | None = None
    session_affinity_config: Raw | None = None
    ip_families: list[str] | None = msgspec.field(default=None, name="ipFamilies")
    ip_family_policy: str | None = msgspec.field(default=None, name="ipFamilyPolicy")
    load_balancer_ip: str | None = msgspec.field(default=None, name="loadBalancerIP")
    load_balancer_class: str | None = None
    load_balancer_source_ranges: list[str] | None = None
    allocate_load_balancer_node_ports: bool | None = None
    health_check_node_port: int | None = None
    traffic_distribution: str | None = None


class Service(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Service"):
    api_version: str
    metadata: ObjectMeta
    spec: ServiceSpec | None = None
    status: Raw | None = None


class ConfigMap(Wire, frozen=True, kw_only=True, tag_field="kind", tag="ConfigMap"):
    api_version: str
    metadata: ObjectMeta
    data: dict[str, str] | None = None
    binary_data: dict[str, str] | None = None
    immutable: bool | None = None


class Secret(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Secret"):
    """`data` values are base64 text, as in Kubernetes JSON."""

    api_version: str
    metadata: ObjectMeta
    type: str | None = None
    data: dict[str, str] | None = None
    string_data: dict[str, str] | None = None
    immutable: bool | None = None


class NetworkPolicySpec(Wire, frozen=True, kw_only=True):
    pod_selector: LabelSelector
    ingress: list[Raw] | None = None
    egress: list[Raw] | None = None
    policy_types: list[str] | None = None


class NetworkPolicy(Wire, frozen=True, kw_only=True, tag_field="kind", tag="NetworkPolicy"):
    api_version: str
    metadata: ObjectMeta
    spec: NetworkPolicySpec | None = None


class PriorityClass(Wire, frozen=True, kw_only=True, tag_field="kind", tag="PriorityClass"):
    api_version: str
    metadata: ObjectMeta
    value: int
    global_default: bool | None = None
    description: str | None = None
    preemption_policy: str | None = None


class ScopedResourceSelectorRequirement(Wire, frozen=True, kw_only=True):
    scope_name: str
    operator: str
    values: list[str] | None = None


class ScopeSelector(Wire, frozen=True, kw_only=True):
    match_expressions: list[ScopedResourceSelectorRequirement] | None = None


class ResourceQuotaSpec(Wire, frozen=True, kw_only=True):
    hard: ResourceList | None = None
    # Stored and shown; the scheduler's resourcequota plugin, like Volcano's, does not narrow a quota by
    # its scopes (docs/compatibility.md).
    scopes: list[str] | None = None
    scope_selector: ScopeSelector | None = None


class ResourceQuotaStatus(Wire, frozen=True, kw_only=True):
    """A quota controller's figures (Kubernetes' kube-controller-manager); Tephra runs none."""

    hard: ResourceList | None = None
    used: ResourceList | None = None


class ResourceQuota(Wire, frozen=True, kw_only=True, tag_field="kind", tag="ResourceQuota"):
    api_version: str
    metadata: ObjectMeta
    spec: ResourceQuotaSpec | None = None
    status: ResourceQuotaStatus | None = None


class PersistentVolumeClaimSpec(Wire, frozen=True, kw_only=True):
    access_modes: list[str] | None = None
    selector: Raw | None = None
    resources: Raw | None = None
    # Set when the claim is bound (by Kubernetes' PV controller, or whoever stores it): the PV it holds.
    volume_name: str | None = None
    storage_class_name: str | None = None
    volume_mode: str | None = None
    data_source: Raw | None = None
    data_source_ref: Raw | None = None
    volume_attributes_class_name: str | None = None


class PersistentVolumeClaimStatus(Wire, frozen=True, kw_only=True):
    phase: str | None = None  # Pending, Bound, Lost
    access_modes: list[str] | None = None
    capacity: ResourceList | None = None
    conditions: list[Raw] | None = None
    allocated_resources: ResourceList | None = None
    allocated_resource_statuses: dict[str, str] | None = None
    current_volume_attributes_class_name: str | None = None
    modify_volume_status: Raw | None = None


class PersistentVolumeClaim(Wire, frozen=True, kw_only=True, tag_field="kind", tag="PersistentVolumeClaim"):
    """A claim on storage. The job controller creates one per `volumes[].volumeClaim`; the scheduler's
    volume predicate fits a pod mounting it only where its bound PersistentVolume may be used."""

    api_version: str
    metadata: ObjectMeta
    spec: PersistentVolumeClaimSpec | None = None
    status: PersistentVolumeClaimStatus | None = None


class VolumeNodeAffinity(Wire, frozen=True, kw_only=True):
    # A NodeSelector (nodeSelectorTerms), the shape of a pod's requiredDuringScheduling node affinity.
    required: Raw | None = None


class PersistentVolumeSpec(Wire, frozen=True, kw_only=True):
    """The fields the volume predicate reads (nodeAffinity) are typed; volume sources are `Raw`."""

    capacity: ResourceList | None = None
    access_modes: list[str] | None = None
    claim_ref: Raw | None = None
    persistent_volume_reclaim_policy: str | None = None
    storage_class_name: str | None = None
    mount_options: list[str] | None = None
    volume_mode: str | None = None
    node_affinity: VolumeNodeAffinity | None = None
    volume_attributes_class_name: str | None = None
    local: Raw | None = None
    host_path: Raw | None = None
    csi: Raw | None = None
    nfs: Raw | None = None
    iscsi: Raw | None = None
    fc: Raw | None = None
    rbd: Raw | None = None
    cephfs: Raw | None = None
    glusterfs: Raw | None = None
    cinder: Raw | None = None
    aws_elastic_block_store: Raw | None = msgspec.field(default=None, name="awsElasticBlockStore")
    gce_persistent_disk: Raw | None = None
    azure_disk: Raw | None = None
    azure_file: Raw | None = None
    vsphere_volume: Raw | None = None


class PersistentVolumeStatus(Wire, frozen=True, kw_only=True):
    phase: str | None = None  # Pending, Available, Bound, Released, Failed
    message: str | None = None
    reason: str | None = None
    last_phase_transition_time: str | None = None


class PersistentVolume(Wire, frozen=True, kw_only=True, tag_field="kind", tag="PersistentVolume"):
    """Cluster-scoped storage; `spec.nodeAffinity.required` limits the nodes a pod using it may run on."""

    api_version: str
    metadata: ObjectMeta
    spec: PersistentVolumeSpec | None = None
    status: PersistentVolumeStatus | None = None

"""Build a ClusterSnapshot from Kubernetes-shaped objects (mappings, YAML or JSON bytes).

The same loader serves `vcctl sim cycle` (a YAML file) and the scheduler service (the shared cache's
JSON). Errors are `SnapshotError`s naming the document index and the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import msgspec
import yaml

from vc_core import pod_requests as kube_rule
from vc_core.errors import InvalidObject
from vc_core.interning import SharedParts, shared, shared_map, shared_strings
from vc_core.resources import Resources, parse_resources, schedulable_resources
from vc_sched_core.snapshot import kube, vgpu
from vc_sched_core.snapshot.cluster import (
    GROUP_NAME_ANNOTATION,
    ClusterSnapshot,
    HostPort,
    HyperNodeMemberObj,
    HyperNodeObj,
    NamespaceObj,
    NetworkTopologyObj,
    NodeObj,
    PersistentVolumeClaimObj,
    PersistentVolumeObj,
    PodDisruptionBudgetObj,
    PodGroupCondition,
    PodGroupObj,
    PodObj,
    PriorityClassObj,
    QueueObj,
    ResourceQuotaObj,
    read_annotations,
)

_PATH: Final = re.compile(r"at `\$\.?(.*)`")


class SnapshotError(InvalidObject):
    """A malformed document: `index` is its position in the input, `field` the offending path."""

    def __init__(self, index: int, kind: str, field: str, message: str) -> None:
        super().__init__(field, "snapshot", f"document {index} ({kind or 'no kind'}): field {field}: {message}")
        self.index = index
        self.kind = kind


def load_snapshot(data: bytes | str) -> ClusterSnapshot:
    """Parse a multi-document YAML (or JSON) text of Kubernetes objects."""
    try:
        documents = [doc for doc in yaml.safe_load_all(data) if doc is not None]
    except yaml.YAMLError as exc:
        raise SnapshotError(_yaml_error_index(data, exc), "", "(document)", f"not valid YAML: {exc}") from exc
    except RecursionError as exc:
        raise SnapshotError(0, "", "(document)", "not valid YAML: nested too deeply") from exc
    if len(documents) == 1 and isinstance(documents[0], list):
        documents = documents[0]
    return load_objects(documents)


def load_objects(documents: Iterable[object]) -> ClusterSnapshot:
    """Decode Kubernetes JSON-shaped mappings; unknown kinds are skipped, `kind: List` is expanded."""
    parts: dict[str, list[Any]] = {k: [] for k in _VIEWS}
    for index, doc in enumerate(documents):
        if not isinstance(doc, Mapping):
            raise SnapshotError(index, "", "(document)", f"expected an object, got {type(doc).__name__}")
        for obj in _expand_list(index, doc):
            kind = obj.get("kind")
            if kind in parts:
                parts[kind].append(_decode(index, str(kind), obj))
    return ClusterSnapshot(
        nodes=tuple(parts["Node"]),
        pods=tuple(parts["Pod"]),
        podgroups=tuple(parts["PodGroup"]),
        queues=tuple(parts["Queue"]),
        priority_classes=tuple(parts["PriorityClass"]),
        namespaces=tuple(parts["Namespace"]),
        resource_quotas=tuple(parts["ResourceQuota"]),
        pod_disruption_budgets=tuple(parts["PodDisruptionBudget"]),
        hypernodes=tuple(parts["HyperNode"]),
        persistent_volume_claims=tuple(parts["PersistentVolumeClaim"]),
        persistent_volumes=tuple(parts["PersistentVolume"]),
    )


def _expand_list(index: int, doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if doc.get("kind") != "List":
        return [doc]
    items = doc.get("items") or []
    if not isinstance(items, list):
        raise SnapshotError(index, "List", "items", "expected a list")
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise SnapshotError(index, "List", f"items[{position}]", "expected an object")
    return items


_VIEWS: Final[dict[str, type[msgspec.Struct]]] = {
    "Node": kube.Node,
    "Pod": kube.Pod,
    "PodGroup": kube.PodGroup,
    "Queue": kube.Queue,
    "PriorityClass": kube.PriorityClass,
    "Namespace": kube.Namespace,
    "ResourceQuota": kube.ResourceQuota,
    "PodDisruptionBudget": kube.PodDisruptionBudget,
    "HyperNode": kube.HyperNode,
    "PersistentVolumeClaim": kube.PersistentVolumeClaim,
    "PersistentVolume": kube.PersistentVolume,
}
_JSON_DECODERS: Final = {kind: msgspec.json.Decoder(view, strict=False) for kind, view in _VIEWS.items()}


def decode_json(kind: str, data: bytes, index: int = 0) -> tuple[object, kube.ObjectMeta]:
    """One stored object's JSON straight into its snapshot view (no intermediate dict: this is the
    scheduler cache's per-event path), with the metadata view (owner references) alongside."""
    view = decode_view(kind, data, index)
    return convert_view(kind, view, index), view.metadata  # type: ignore[attr-defined]


def decode_view(kind: str, data: bytes, index: int = 0) -> msgspec.Struct:
    """One stored object's JSON as the loader's typed view of it (kube.py), not yet converted: the
    decoding is the cheap part, so a reader that needs only a few fields (brief_pod) stops here."""
    try:
        return _JSON_DECODERS[kind].decode(data)
    except msgspec.DecodeError as exc:
        raise _snapshot_error(index, kind, exc) from exc
    except RecursionError as exc:  # nested deeper than the interpreter's limit: input, not a bug
        raise SnapshotError(index, kind, "(document)", "nested too deeply") from exc
    except UnicodeDecodeError as exc:  # bytes that are not UTF-8 in a string (found by fuzzing: a scheduler crash)
        raise SnapshotError(index, kind, "(document)", f"not UTF-8: {exc.reason} at byte {exc.start}") from exc


def convert_view(kind: str, view: msgspec.Struct, index: int = 0) -> object:
    """A decoded view (decode_view) as its snapshot object."""
    return _convert(index, kind, view)


def convert_pod(view: kube.Pod, index: int = 0, previous: PodObj | None = None) -> PodObj:
    """A decoded pod view as its snapshot object; `previous`: the pod's last version as converted, whose
    parts the new one keeps where they are equal (the scheduler cache's per-change path)."""
    try:
        return _pod(view, index, previous)
    except InvalidObject as exc:
        raise SnapshotError(index, "Pod", exc.field, exc.message) from exc


_NO_STRINGS: Final[dict[str, str]] = {}  # a brief pod's labels and node selector: none (read only)
# PodGroup name -> a brief pod's annotations: that name alone (read only, shared by the group's pods).
_BRIEF_ANNOTATIONS: Final[SharedParts[str, dict[str, str]]] = SharedParts()


def brief_pod(pod: kube.Pod, index: int = 0) -> PodObj:
    """A pod with only what its counts need: where it is, its PodGroup, its phase, whether it is
    leaving, its requests (the scheduler cache holds other instances' pods this way: they count in
    sums, never in a session). Everything a predicate or an order reads is left empty; `full_pod`
    gives the whole view."""
    meta = pod.metadata
    try:
        _require_name(meta)
        requests = pod_requests(pod.spec)
    except InvalidObject as exc:
        raise SnapshotError(index, "Pod", exc.field, exc.message) from exc
    group = meta.annotations.get(GROUP_NAME_ANNOTATION)
    return PodObj(
        name=meta.name,
        namespace=shared(meta.namespace or "default"),
        uid=shared(meta.uid or f"{meta.namespace or 'default'}/{meta.name}"),
        labels=_NO_STRINGS,
        annotations=_BRIEF_ANNOTATIONS.one(group, lambda: {GROUP_NAME_ANNOTATION: shared(group)})
        if group
        else _NO_STRINGS,
        scheduler_name="",
        node_name=shared(pod.spec.node_name),
        priority=None,
        priority_class_name="",
        preemption_policy="",
        node_selector=_NO_STRINGS,
        affinity=None,
        tolerations=(),
        requests=requests,
        phase=shared(pod.status.phase or "Pending"),
        deleting=meta.deletion_timestamp is not None,
        order=index,
    )


def _decode(index: int, kind: str, obj: Mapping[str, Any]) -> object:
    try:
        view = msgspec.convert(obj, _VIEWS[kind], strict=False)
    except msgspec.ValidationError as exc:
        raise _snapshot_error(index, kind, exc) from exc
    return _convert(index, kind, view)


def _snapshot_error(index: int, kind: str, exc: msgspec.DecodeError) -> SnapshotError:
    match = _PATH.search(str(exc))
    field = match.group(1) if match and match.group(1) else "(document)"
    return SnapshotError(index, kind, field, str(exc).split(" - at ")[0])


def _convert(index: int, kind: str, view: Any) -> object:
    try:
        match kind:
            case "Node":
                return _node(view)
            case "Pod":
                return _pod(view, index)
            case "PodGroup":
                return _podgroup(view, index)
            case "Queue":
                return _queue(view, index)
            case "Namespace":
                _require_name(view.metadata)
                return NamespaceObj(view.metadata.name, dict(view.metadata.labels))
            case "ResourceQuota":
                return _resource_quota(view)
            case "PodDisruptionBudget":
                return _pod_disruption_budget(view)
            case "HyperNode":
                return _hypernode(view)
            case "PersistentVolumeClaim":
                _require_name(view.metadata)
                meta = view.metadata
                return PersistentVolumeClaimObj(meta.name, meta.namespace or "default", view.spec.volume_name)
            case "PersistentVolume":
                _require_name(view.metadata)
                affinity = view.spec.node_affinity
                return PersistentVolumeObj(view.metadata.name, affinity.required if affinity else None)
            case _:
                return _priority_class(view)
    except InvalidObject as exc:
        raise SnapshotError(index, kind, exc.field, exc.message) from exc


def _require_name(meta: kube.ObjectMeta) -> None:
    if not meta.name:
        raise InvalidObject("metadata.name", "required", "is required")


def _node(node: kube.Node) -> NodeObj:
    _require_name(node.metadata)
    allocatable = parse_resources(node.status.allocatable, field="status.allocatable")
    pods = allocatable.pop("pods", None)
    return NodeObj(
        name=node.metadata.name,
        labels=dict(node.metadata.labels),
        taints=tuple(node.spec.taints),
        unschedulable=node.spec.unschedulable,
        allocatable=allocatable,
        max_pods=None if pods is None else int(pods),
        vgpu=vgpu.node_inventory(node.metadata.annotations, allocatable)
        if vgpu.NODE_REGISTER in node.metadata.annotations
        else None,
    )


_ONE_CONTAINER: Final[dict[tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]], Resources]] = {}
_ONE_CONTAINER_MAX: Final = 4_096


def pod_requests(spec: kube.PodSpec) -> Resources:
    """What the pod asks of a node (vc_core.pod_requests: Kubernetes' rule, Volcano's InitResreq), its
    `pods` slot and zero amounts left out."""
    if len(spec.containers) == 1 and not spec.init_containers and not spec.overhead:
        # The common pod (the scheduler's cache decodes every pod change): its one container's requests,
        # the same values add() would give, without the sums; parsed once per distinct resources (the
        # pods of a template ask alike), and that one dict shared by them (read only, as every view's
        # fields are: sums are made into new dicts).
        resources = spec.containers[0].resources
        key = (tuple(resources.limits.items()), tuple(resources.requests.items()))
        known = _ONE_CONTAINER.get(key)
        if known is None:
            only = kube_rule.container_requests(spec.containers[0], "spec.containers[0]")
            known = {name: value for name, value in only.items() if value != 0 and name != "pods"}
            if len(_ONE_CONTAINER) < _ONE_CONTAINER_MAX:
                _ONE_CONTAINER[key] = known
        return known
    total = kube_rule.pod_requests(spec)
    total.pop("pods", None)
    return {name: value for name, value in total.items() if value != 0}


def _pod(pod: kube.Pod, index: int, previous: PodObj | None = None) -> PodObj:
    meta = pod.metadata
    _require_name(meta)
    spec = pod.spec
    # The scheduler's cache holds one of these per pod: the text pods repeat (namespace, label and
    # annotation keys and values, node, phase, creation second) is shared, not copied per pod. So is
    # its uid: a pod changes several times (created, bound, started), and what is kept by uid (the
    # cache's index, the carried session) would otherwise hold a copy from each version. A part equal
    # to the pod's `previous` version's is that version's object: most changes (a bind, a start) leave
    # the labels, annotations, selector and tolerations as they were, and comparing them costs less
    # than sharing their strings again; equal parts that are one object also compare at once. Of the
    # annotations only those a scheduler reads are kept, one dict for the pods that carry the same
    # (a gang's, or a task's): see POD_ANNOTATIONS_READ.
    annotations = read_annotations(meta.annotations)
    return PodObj(
        name=meta.name,
        namespace=shared(meta.namespace or "default"),
        uid=shared(meta.uid or f"{meta.namespace or 'default'}/{meta.name}"),
        labels=previous.labels
        if previous is not None and meta.labels == previous.labels
        else shared_strings(meta.labels),
        annotations=previous.annotations
        if previous is not None and annotations == previous.annotations
        else shared_map(annotations),
        scheduler_name=shared(spec.scheduler_name),
        node_name=shared(spec.node_name),
        priority=spec.priority,
        priority_class_name=shared(spec.priority_class_name),
        preemption_policy=shared(spec.preemption_policy),
        node_selector=previous.node_selector
        if previous is not None and spec.node_selector == previous.node_selector
        else shared_map(spec.node_selector),
        affinity=previous.affinity if previous is not None and spec.affinity == previous.affinity else spec.affinity,
        tolerations=previous.tolerations
        if previous is not None and spec.tolerations == previous.tolerations
        else spec.tolerations,
        requests=pod_requests(spec),
        phase=shared(pod.status.phase or "Pending"),
        deleting=meta.deletion_timestamp is not None,
        creation=shared(meta.creation_timestamp or ""),
        order=index,
        topology_spread=pod.spec.topology_spread_constraints,
        host_ports=host_ports(pod.spec),
        vgpu=vgpu.pod_request(pod.spec.containers, meta.annotations, meta.namespace or "default"),
        claims=tuple(v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim),
    )


def host_ports(spec: kube.PodSpec) -> tuple[HostPort, ...]:
    """The (protocol, host IP, port) each container takes on its node; with hostNetwork a container
    port is a host port (the API server's defaulting)."""
    taken: list[HostPort] = []
    for container in spec.containers:
        for port in container.ports:
            number = port.host_port or (port.container_port if spec.host_network else 0)
            if number > 0:
                ip = "" if port.host_ip in ("", "0.0.0.0") else port.host_ip  # 0.0.0.0: every address
                taken.append((port.protocol or "TCP", ip, number))
    return tuple(taken)


def _resource_quota(quota: kube.ResourceQuota) -> ResourceQuotaObj:
    _require_name(quota.metadata)
    hard = quota.status.hard or quota.spec.hard
    used = quota.status.used
    return ResourceQuotaObj(
        name=quota.metadata.name,
        namespace=quota.metadata.namespace or "default",
        hard=parse_resources(hard, field="status.hard" if quota.status.hard else "spec.hard"),
        used=None if used is None else parse_resources(used, field="status.used"),
    )


def _pod_disruption_budget(pdb: kube.PodDisruptionBudget) -> PodDisruptionBudgetObj:
    _require_name(pdb.metadata)
    return PodDisruptionBudgetObj(
        name=pdb.metadata.name,
        namespace=pdb.metadata.namespace or "default",
        selector=pdb.spec.selector,
        min_available=pdb.spec.min_available,
        max_unavailable=pdb.spec.max_unavailable,
        disruptions_allowed=pdb.status.disruptions_allowed,
        disrupted_pods=frozenset(pdb.status.disrupted_pods),
    )


def _podgroup(pg: kube.PodGroup, index: int) -> PodGroupObj:
    meta = pg.metadata
    _require_name(meta)
    if pg.spec.min_member < 0:
        raise InvalidObject("spec.minMember", "minimum", "must be >= 0")
    min_resources = quota_request = None
    if pg.spec.min_resources is not None:
        quota_request = parse_resources(pg.spec.min_resources, field="spec.minResources")
        min_resources = schedulable_resources(quota_request)
    conditions = tuple(
        PodGroupCondition(c.type, c.status, c.reason, c.message, c.transition_id) for c in pg.status.conditions
    )
    return PodGroupObj(
        name=meta.name,
        namespace=meta.namespace or "default",
        labels=dict(meta.labels),
        annotations=dict(meta.annotations),
        min_member=pg.spec.min_member,
        min_task_member=dict(pg.spec.min_task_member),
        min_resources=min_resources,
        queue=pg.spec.queue or "default",
        priority_class_name=pg.spec.priority_class_name,
        phase=pg.status.phase,
        conditions=conditions,
        creation=meta.creation_timestamp or "",
        order=index,
        quota_request=quota_request,
        network_topology=_network_topology(pg.spec.network_topology),
    )


def _network_topology(spec: kube.NetworkTopology | None) -> NetworkTopologyObj | None:
    if spec is None:
        return None
    return NetworkTopologyObj(mode=spec.mode or "hard", highest_tier_allowed=spec.highest_tier_allowed)


def _hypernode(hn: kube.HyperNode) -> HyperNodeObj:
    _require_name(hn.metadata)
    members = tuple(
        HyperNodeMemberObj(
            type=m.type,
            exact=m.selector.exact_match.name if m.selector.exact_match else None,
            pattern=m.selector.regex_match.pattern if m.selector.regex_match else None,
            labels=m.selector.label_match,
        )
        for m in hn.spec.members
    )
    return HyperNodeObj(hn.metadata.name, hn.spec.tier, members)


def _queue(queue: kube.Queue, index: int) -> QueueObj:
    _require_name(queue.metadata)
    if queue.spec.weight < 1:
        raise InvalidObject("spec.weight", "minimum", "must be >= 1")
    return QueueObj(
        name=queue.metadata.name,
        weight=queue.spec.weight,
        capability=parse_resources(queue.spec.capability, field="spec.capability"),
        deserved=parse_resources(queue.spec.deserved, field="spec.deserved"),
        guarantee=parse_resources(queue.spec.guarantee.resource, field="spec.guarantee.resource"),
        reclaimable=queue.spec.reclaimable,
        parent=queue.spec.parent,
        priority=queue.spec.priority,
        state=queue.status.state or "Open",
        annotations=dict(queue.metadata.annotations),
        creation=queue.metadata.creation_timestamp or "",
        order=index,
    )


def _priority_class(pc: kube.PriorityClass) -> PriorityClassObj:
    _require_name(pc.metadata)
    return PriorityClassObj(pc.metadata.name, pc.value, pc.global_default, pc.preemption_policy)


def _yaml_error_index(data: bytes | str, exc: yaml.YAMLError) -> int:
    """The document index of a YAML syntax error: the `---` separators before the error line."""
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return 0
    text = data.decode() if isinstance(data, bytes) else data
    lines = text.splitlines()
    separators = sum(1 for line in lines[: mark.line] if line.rstrip() == "---" or line.startswith("--- "))
    first = next((line for line in lines if line.strip() and not line.lstrip().startswith("#")), "")
    return max(0, separators - (1 if first.startswith("---") else 0))

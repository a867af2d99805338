"""Open a session's state from a snapshot: nodes as matrices, jobs from PodGroups, tasks from pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

import msgspec

from vc_core.interning import SharedParts
from vc_sched_core.framework.model import JobInfo, QueueInfo, TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeInfo, NodeTable
from vc_sched_core.framework.resources import ResourceSpace, Vector, is_empty
from vc_sched_core.snapshot.cluster import (
    DEFAULT_QUEUE,
    ROOT_QUEUE,
    ClusterSnapshot,
    PodGroupObj,
    PodObj,
    PriorityClassObj,
    QueueObj,
)

PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_KEY = "volcano.sh/task-priority"
OCCUPYING_PHASES = frozenset({"Pending", "Running"})


def resource_space(snapshot: ClusterSnapshot) -> ResourceSpace:
    names: set[str] = set()
    for node in snapshot.nodes:
        names.update(node.allocatable)
    for pod in snapshot.pods:
        names.update(pod.requests)
    for pg in snapshot.podgroups:
        names.update(pg.min_resources or {})
    for queue in snapshot.queues:
        names.update(queue.capability, queue.deserved, queue.guarantee)
    if snapshot.outside is not None:
        names.update(snapshot.outside.names())
    return ResourceSpace.of(names)


def build_queues(snapshot: ClusterSnapshot) -> dict[str, QueueInfo]:
    """Snapshot queues plus `root` and `default`, which Volcano's scheduler creates when missing."""
    queues = {q.name: QueueInfo(q.name, q.weight, q) for q in snapshot.queues}
    if ROOT_QUEUE not in queues:
        queues[ROOT_QUEUE] = QueueInfo(ROOT_QUEUE, 1, QueueObj(ROOT_QUEUE, reclaimable=False, order=-2))
    if DEFAULT_QUEUE not in queues:
        queues[DEFAULT_QUEUE] = QueueInfo(DEFAULT_QUEUE, 1, QueueObj(DEFAULT_QUEUE, reclaimable=True, order=-1))
    return queues


def default_priority(classes: Mapping[str, PriorityClassObj]) -> int:
    return next((pc.value for pc in classes.values() if pc.global_default), 0)


def _flag(annotations: Mapping[str, str], labels: Mapping[str, str], default: bool) -> bool:
    """Annotation wins over label; an unparsable value is false (Volcano GetPodPreemptable)."""
    raw = annotations.get(PREEMPTABLE_KEY, labels.get(PREEMPTABLE_KEY))
    if raw is None:
        return default
    return raw.strip().lower() in ("true", "1", "t")


def build_job(pg: PodGroupObj, space: ResourceSpace, classes: Mapping[str, PriorityClassObj]) -> JobInfo:
    pc = classes.get(pg.priority_class_name)
    min_res = pg.min_resources
    return JobInfo(
        uid=pg.key,
        name=pg.name,
        namespace=pg.namespace,
        queue=pg.queue,
        min_available=pg.min_member,
        task_min_available=dict(pg.min_task_member),
        min_resources=None if min_res is None else space.vector(min_res),
        min_resources_dims=space.dims(min_res or {}),
        priority=pc.value if pc is not None else default_priority(classes),
        preemptable=_flag(pg.annotations, pg.labels, default=False),
        podgroup=pg,
        phase=pg.phase,
        allocated=space.zeros(),
        conditions={c.type: c for c in pg.conditions},
    )


def task_status(pod: PodObj) -> TaskStatus:
    """Volcano's getTaskStatus."""
    match pod.phase:
        case "Running":
            return TaskStatus.RELEASING if pod.deleting else TaskStatus.RUNNING
        case "Pending":
            if pod.deleting:
                return TaskStatus.RELEASING
            return TaskStatus.BOUND if pod.node_name else TaskStatus.PENDING
        case "Succeeded":
            return TaskStatus.SUCCEEDED
        case "Failed":
            return TaskStatus.FAILED
        case _:
            return TaskStatus.UNKNOWN


def _task_priority(pod: PodObj, classes: Mapping[str, PriorityClassObj]) -> int:
    override = pod.annotations.get(TASK_PRIORITY_KEY)
    if override is not None and override.lstrip("-").isdigit():
        return int(override)
    if pod.priority is not None:
        return pod.priority
    pc = classes.get(pod.priority_class_name)
    return pc.value if pc is not None else 1


def _name_index(name: str) -> int | None:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() and "-" in name else None


_class_keys: msgspec.json.Encoder = msgspec.json.Encoder()
# Each distinct class key as one object: the pods of a template place alike, and a carried session keeps
# a task per pod for its life.
_CLASS_KEYS: SharedParts[bytes, bytes] = SharedParts(limit=4_096)


def _class_key(placement: tuple[object, ...]) -> bytes:
    key = _class_keys.encode(placement)
    return _CLASS_KEYS.one(key, lambda: key)


class RequestVectors:
    """Request vectors by request, for one resource space: the pods of a template ask for the same
    resources, so each distinct request is converted once (read-only vectors, shared by the tasks)."""

    def __init__(self, space: ResourceSpace) -> None:
        self.space = space
        self._vectors: dict[tuple[tuple[str, object], ...], tuple[Vector, bool]] = {}

    def of(self, requests: Mapping[str, Fraction]) -> tuple[Vector, bool]:
        """The request vector and whether it is best effort (requests nothing)."""
        key = tuple(requests.items())
        hit = self._vectors.get(key)
        if hit is None:
            vector = self.space.vector(requests)
            vector.flags.writeable = False
            hit = self._vectors[key] = (vector, is_empty(vector, self.space.tolerance))
        return hit


def build_task(
    pod: PodObj,
    job_uid: str,
    space: ResourceSpace,
    classes: Mapping[str, PriorityClassObj],
    vectors: RequestVectors | None = None,
) -> TaskInfo:
    if vectors is not None:
        resreq, best_effort = vectors.of(pod.requests)
    else:
        resreq = space.vector(pod.requests)
        best_effort = is_empty(resreq, space.tolerance)
    # Node-side only: pod (anti-)affinity is checked per task across nodes, never from the class cache.
    node_affinity = pod.affinity.node_affinity if pod.affinity else None
    placement: tuple[object, ...] = (pod.node_selector, node_affinity, pod.tolerations, pod.host_ports)
    if pod.vgpu is not None:  # which GPUs a vGPU pod may share (deviceshare's node-local predicate)
        placement = (*placement, pod.vgpu)
    if pod.claims:  # which volumes, so which nodes (predicates' volume check): claims are namespaced
        placement = (*placement, pod.namespace, pod.claims)
    return TaskInfo(
        uid=pod.uid,
        name=pod.name,
        namespace=pod.namespace,
        job=job_uid,
        role=pod.annotations.get(TASK_SPEC_KEY, pod.labels.get(TASK_SPEC_KEY, "")),
        resreq=resreq,
        best_effort=best_effort,
        priority=_task_priority(pod, classes),
        preemptable=_flag(pod.annotations, pod.labels, default=True),
        status=task_status(pod),
        pod=pod,
        class_key=_class_key(placement),
        index=_name_index(pod.name),
        node_name=pod.node_name,
        preemption_policy=pod.preemption_policy or _class_policy(pod, classes),
    )


def _class_policy(pod: PodObj, classes: Mapping[str, PriorityClassObj]) -> str:
    pc = classes.get(pod.priority_class_name)
    return pc.preemption_policy if pc is not None else ""


def build_jobs_and_tasks(
    snapshot: ClusterSnapshot,
    *,
    space: ResourceSpace,
    nodes: NodeTable,
    queues: Mapping[str, QueueInfo],
    classes: Mapping[str, PriorityClassObj],
    scheduler_names: Iterable[str],
) -> dict[str, JobInfo]:
    """Jobs of PodGroups whose queue exists; every occupying pod is accounted on its node.

    The plain build, every object anew; a session opens on CarriedState (carried.py), which builds
    the same way and then keeps what it built for the next cycle."""
    jobs = {pg.key: build_job(pg, space, classes) for pg in snapshot.podgroups if pg.queue in queues}
    ours = frozenset(scheduler_names)
    placed: list[tuple[NodeInfo, TaskInfo]] = []  # accounted on their nodes in one go below
    for pod in snapshot.pods:
        group = pod.group_name
        job = jobs.get(f"{pod.namespace}/{group}") if group and pod.scheduler_name in ours else None
        if job is None and not (pod.node_name and pod.phase in OCCUPYING_PHASES):
            continue
        task = build_task(pod, job.uid if job else "", space, classes)
        if job is not None:
            job.add_task(task)
        node = nodes.by_name.get(task.node_name)
        if node is not None and task.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
            placed.append((node, task))
        elif job is not None and task.node_name and node is None:
            task.node_name = ""  # its node is gone from the snapshot
    nodes.add_tasks(placed)
    return jobs

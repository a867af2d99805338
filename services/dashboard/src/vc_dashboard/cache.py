"""The dashboard's view of the shared cache: one informer per kind it shows, and the indexes its pages need.

Every change becomes topics for the hub: the kind (`Pod`), and `job:<ns>/<name>` when it belongs to a
job (the job itself, its PodGroup by owner, its pods by the `volcano.sh/job-name` label), so a job's
page wakes only for its own job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from vc_core.store import ObjectStore
from vc_dashboard.hub import job_topic
from vc_dashboard.logic.nodes import NodeUsage
from vc_proto.batch import Job
from vc_proto.core import Node, Pod
from vc_proto.kinds import KubeObject
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.vocabulary import JOB_NAME_KEY
from vc_runtime.informer import Informer

JobKey = tuple[str, str]  # (namespace, job name)
Publish = Callable[[Iterable[str]], None]
ObjT = TypeVar("ObjT", Job, PodGroup, Pod, Queue, Node)


def owning_job(obj: KubeObject) -> JobKey | None:
    """The job a PodGroup (owner reference) or a pod (label) belongs to."""
    namespace = obj.metadata.namespace or ""
    if isinstance(obj, Job):
        return (namespace, obj.metadata.name or "")
    if isinstance(obj, Pod):
        name = (obj.metadata.labels or {}).get(JOB_NAME_KEY)
        return (namespace, name) if name else None
    for owner in obj.metadata.owner_references or ():
        if owner.kind == "Job":
            return (namespace, owner.name)
    return None


class ClusterCache:
    def __init__(self, store: ObjectStore, *, publish: Publish) -> None:
        self._publish = publish
        self.queues: Informer[Queue] = Informer(store, Queue, on_change=self._changed("Queue"))
        self.jobs: Informer[Job] = Informer(store, Job, on_change=self._changed("Job"))
        self.podgroups: Informer[PodGroup] = Informer(store, PodGroup, on_change=self._group_changed)
        self.pods: Informer[Pod] = Informer(store, Pod, on_change=self._pod_changed)
        self.nodes: Informer[Node] = Informer(store, Node, on_change=self._changed("Node"))
        self.usage = NodeUsage()
        self._group_of: dict[JobKey, tuple[str, str]] = {}
        self._pods_of: dict[JobKey, set[str]] = {}

    @property
    def informers(self) -> list[Informer[KubeObject]]:
        return [self.queues, self.jobs, self.podgroups, self.pods, self.nodes]  # type: ignore[list-item]

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    def podgroup_of(self, namespace: str, job: str) -> PodGroup | None:
        key = self._group_of.get((namespace, job))
        return self.podgroups.get(*key) if key else None

    def pods_of(self, namespace: str, job: str) -> list[Pod]:
        names = sorted(self._pods_of.get((namespace, job), ()))
        return [pod for name in names if (pod := self.pods.get(namespace, name)) is not None]

    def pod_count_of(self, namespace: str, job: str) -> int:
        return len(self._pods_of.get((namespace, job), ()))

    def _changed(self, kind: str) -> Callable[[ObjT | None, ObjT | None], None]:
        def changed(old: ObjT | None, new: ObjT | None) -> None:
            obj = new or old
            assert obj is not None
            job = owning_job(obj) if kind == "Job" else None
            self._publish((kind, job_topic(*job)) if job else (kind,))

        return changed

    def _group_changed(self, old: PodGroup | None, new: PodGroup | None) -> None:
        for obj, present in ((old, False), (new, True)):
            job = owning_job(obj) if obj is not None else None
            if obj is None or job is None:
                continue
            key = (obj.metadata.namespace or "", obj.metadata.name or "")
            if present:
                self._group_of[job] = key
            elif self._group_of.get(job) == key:
                del self._group_of[job]
        self._publish(self._topics("PodGroup", old, new))

    def _pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        self.usage.apply(old, new)
        if old is not None and (job := owning_job(old)) is not None:
            names = self._pods_of.get(job)
            if names is not None:
                names.discard(old.metadata.name or "")
                if not names:
                    del self._pods_of[job]
        if new is not None and (job := owning_job(new)) is not None:
            self._pods_of.setdefault(job, set()).add(new.metadata.name or "")
        self._publish(self._topics("Pod", old, new))

    @staticmethod
    def _topics(kind: str, old: KubeObject | None, new: KubeObject | None) -> set[str]:
        topics = {kind}
        for obj in (old, new):
            job = owning_job(obj) if obj is not None else None
            if job is not None:
                topics.add(job_topic(*job))
        return topics

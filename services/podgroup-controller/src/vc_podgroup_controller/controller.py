"""The shell: pods waiting for a group are indexed by group; one dispatcher key per group.

Keying by group (not by pod) makes the group's owner the single writer of the PodGroup *and* of the
annotations on all its pods, so two instances never race to create the same group. Creation is
create-if-absent and annotation is a compare-and-set, so a restart mid-way simply finishes the job.
A pod admission would refuse (it reached the store some other way) gets no group: it is reported once
and left alone. That includes a pod whose queue does not admit its namespace (`allowedNamespaces`): the
PodGroup made here is written past admission, so the controller applies the queue tenancy itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import msgspec
import structlog

from vc_bus.decoding import CorruptObject
from vc_core.errors import AlreadyExists, Conflict, NotFound
from vc_core.retry import RetryPolicy
from vc_core.store import ObjectStore
from vc_podgroup_controller.logic.build import build_podgroup
from vc_podgroup_controller.logic.selection import group_name, wants_podgroup
from vc_podgroup_controller.metrics import ANNOTATED, CREATED
from vc_proto.core import Pod
from vc_proto.kinds import KINDS
from vc_proto.pod_shards import controller_ref
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.selectors import pods_naming_no_group
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION
from vc_runtime.informer import Informer, ObjectKey
from vc_runtime.refusals import report_refused
from vc_runtime.sharding import FencedStore, Ownership
from vc_validation import pod_violations, summarize
from vc_validation.pods_tenancy import validate_pod_queue

log = structlog.get_logger(__name__)
GroupKey = tuple[str, str]  # (namespace, podgroup name)
# The group annotation is a compare-and-set on the pod: lost to another writer, it is tried again on the
# pod as stored now, up to 5 times.
ANNOTATE_RETRY = RetryPolicy((Conflict,), base_s=0.005, cap_s=0.05, attempts=5)


def ownership_key(group: GroupKey) -> str:
    return f"{group[0]}/{group[1]}"


class PodGroupController:
    def __init__(
        self,
        *,
        store: ObjectStore,
        writer: FencedStore,
        ownership: Ownership,
        scheduler_names: frozenset[str],
        submit: Callable[[GroupKey], None],
    ) -> None:
        self._writer = writer
        self._ownership = ownership
        self._scheduler_names = scheduler_names
        self._submit = submit
        # Only pods that may want a group are decoded and cached: a vcjob's pods (nearly every pod under
        # load) name theirs from the start, and a pod this controller annotated leaves the cache.
        self.pods: Informer[Pod] = Informer(
            store, Pod, on_change=self._pod_changed, select=pods_naming_no_group(scheduler_names)
        )
        self.queues: Informer[Queue] = Informer(store, Queue)
        self._waiting: dict[GroupKey, set[ObjectKey]] = {}
        self._refused: set[tuple[ObjectKey, str]] = set()  # (pod key, uid) already reported

    def synced(self) -> bool:
        return self.pods.synced.is_set() and self.queues.synced.is_set()

    def waiting_groups(self) -> list[GroupKey]:
        return list(self._waiting)

    def _pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        pod = new or old
        assert pod is not None
        group = (pod.metadata.namespace or "", group_name(pod))
        key = (pod.metadata.namespace, pod.metadata.name or "")
        if new is not None and wants_podgroup(new, self._scheduler_names):
            self._waiting.setdefault(group, set()).add(key)
            self._submit(group)
        elif group in self._waiting:
            self._waiting[group].discard(key)
        if new is None:
            self._refused.discard((key, pod.metadata.uid or ""))

    async def handle(self, group: GroupKey) -> None:
        if not self.synced() or not self._ownership.owns(ownership_key(group)):
            return
        pods = self._pods_waiting(group)
        if not pods:
            self._waiting.pop(group, None)
            return
        await self._ensure_group(pods[0])
        for pod in pods:
            await self._annotate(pod, group[1])

    def _pods_waiting(self, group: GroupKey) -> list[Pod]:
        found = (self.pods.get(ns, name) for ns, name in self._waiting.get(group, ()))
        return [p for p in found if p is not None and wants_podgroup(p, self._scheduler_names) and self._admissible(p)]

    def _admissible(self, pod: Pod) -> bool:
        queues = {name: queue for (_, name), queue in self.queues.items.items()}
        scheduler_names = tuple(self._scheduler_names)
        # The embedded store has no Namespace objects: a pod naming no queue goes to `default`.
        tenancy = validate_pod_queue(pod, queues, {}, scheduler_names)
        violations = [*pod_violations(pod, scheduler_names), *tenancy]
        if not violations:
            return True
        key = ((pod.metadata.namespace, pod.metadata.name or ""), pod.metadata.uid or "")
        if key not in self._refused:
            self._refused.add(key)
            where = f"{pod.metadata.namespace}/{pod.metadata.name}"
            report_refused(kind="Pod", key=where, rule=violations[0].rule, message=summarize(violations))
        return False

    async def _ensure_group(self, pod: Pod) -> None:
        namespace, name = pod.metadata.namespace, group_name(pod)
        try:
            await self._writer.get(PodGroup, namespace, name)
            return
        except NotFound:
            pass
        podgroup = build_podgroup(pod, owner_annotations=await self._owner_annotations(pod))
        try:
            await self._writer.create(podgroup)
        except AlreadyExists:
            return
        CREATED.inc()
        log.info(
            "podgroup.created",
            namespace=namespace,
            podgroup=name,
            pod=pod.metadata.name,
            min_member=podgroup.spec.min_member if podgroup.spec else None,
        )

    async def _owner_annotations(self, pod: Pod) -> Mapping[str, str] | None:
        """The owner's annotations when Tephra stores its kind (else unknown: minMember stays 1)."""
        ref = controller_ref(pod)
        row = KINDS.get(ref.kind) if ref is not None else None
        if ref is None or row is None or row.api_version != ref.api_version or not row.namespaced:
            return None
        try:
            owner = await self._writer.get(row.type, pod.metadata.namespace, ref.name)
        except (NotFound, CorruptObject):
            return None  # an owner that is gone or unreadable says nothing about the group's size
        return owner.metadata.annotations if owner.metadata.uid == ref.uid else None

    async def _annotate(self, pod: Pod, group: str) -> None:
        async def once() -> None:
            nonlocal pod
            try:
                stored = await self._writer.update(_with_group(pod, group))
            except Conflict:
                fresh = await self._fresh(pod)
                if fresh is None:
                    return  # gone, or annotated meanwhile: nothing left to do
                pod = fresh
                raise
            self.pods.remember(stored)
            ANNOTATED.inc()

        try:
            await ANNOTATE_RETRY.call(once, sleep=asyncio.sleep)
        except NotFound:
            return

    async def _fresh(self, pod: Pod) -> Pod | None:
        """The pod as stored now, if it still needs the annotation."""
        try:
            fresh = await self._writer.get(Pod, pod.metadata.namespace, pod.metadata.name or "")
        except (NotFound, CorruptObject):
            return None
        return fresh if wants_podgroup(fresh, self._scheduler_names) else None


def _with_group(pod: Pod, group: str) -> Pod:
    annotations = {**(pod.metadata.annotations or {}), GROUP_NAME_ANNOTATION: group}
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, annotations=annotations))

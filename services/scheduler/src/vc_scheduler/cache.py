"""SHELL: the scheduler's cache of the cluster, fed by the shared KV change streams.

Objects are kept as the core's snapshot views (decoded by the same loader `vcctl sim cycle` uses).
`assume()` marks a pod bound the moment a cycle decides it, so the next cycle never places it twice
while the write is in flight (Volcano's AddBindTask / kube-scheduler's assume); the watch then
confirms or corrects it.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import msgspec

from vc_bus.kvwatch import watch_bucket
from vc_core.store import WatchOp
from vc_proto import subjects
from vc_runtime.aio import until
from vc_scheduler.snapshot.cluster import ClusterSnapshot, NodeObj, PodGroupObj, PodObj, PriorityClassObj, QueueObj
from vc_scheduler.snapshot.loader import SnapshotError, load_objects

KINDS = ("Node", "Pod", "PodGroup", "Queue", "PriorityClass")
_any = msgspec.json.Decoder(dict[str, Any])


class SchedulerCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeObj] = {}
        self.pods: dict[str, PodObj] = {}
        self.podgroups: dict[str, PodGroupObj] = {}
        self.queues: dict[str, QueueObj] = {}
        self.priority_classes: dict[str, PriorityClassObj] = {}
        # PodGroup key -> the vcjob that owns it, for publishing verdicts on the job's history.
        self.owner_job: dict[str, str] = {}
        self.synced = {kind: asyncio.Event() for kind in KINDS}
        self.changed = asyncio.Event()
        self._order = 0
        self.decode_errors = 0

    def snapshot(self) -> ClusterSnapshot:
        return ClusterSnapshot(
            nodes=tuple(self.nodes.values()),
            pods=tuple(self.pods.values()),
            podgroups=tuple(self.podgroups.values()),
            queues=tuple(self.queues.values()),
            priority_classes=tuple(self.priority_classes.values()),
        )

    def assume(self, pod_key: str, node: str) -> None:
        pod = self.pods.get(pod_key)
        if pod is not None and not pod.node_name:
            self.pods[pod_key] = replace(pod, node_name=node)

    def forget_assumed(self, pod_key: str) -> None:
        pod = self.pods.get(pod_key)
        if pod is not None and pod.phase == "Pending":
            self.pods[pod_key] = replace(pod, node_name="")

    async def follow(self, js: Any, kind: str, shutdown: asyncio.Event) -> None:
        table = self._table(kind)
        async for entry in until(shutdown, watch_bucket(js, subjects.bucket(kind))):
            if entry.op is WatchOp.SYNCED:
                self.synced[kind].set()
                self.changed.set()
                continue
            namespace, name = subjects.split_key(entry.key)
            key = f"{namespace}/{name}" if namespace else name
            if entry.op is WatchOp.DELETE:
                table.pop(key, None)
                self.owner_job.pop(key, None)
            else:
                self._put(kind, key, entry.value, table)
            self.changed.set()

    def _put(self, kind: str, key: str, data: bytes, table: dict[str, Any]) -> None:
        doc = _any.decode(data)
        self._order += 1
        try:
            snap = load_objects([doc])
        except SnapshotError:
            self.decode_errors += 1
            return
        parts = {"Node": snap.nodes, "Pod": snap.pods, "PodGroup": snap.podgroups, "Queue": snap.queues,
                 "PriorityClass": snap.priority_classes}[kind]
        if not parts:
            return
        obj = parts[0]
        if hasattr(obj, "order"):
            obj = replace(obj, order=self._order)
        table[key] = obj
        if kind == "PodGroup":
            owners = (doc.get("metadata") or {}).get("ownerReferences") or []
            job = next((o.get("name") for o in owners if o.get("kind") == "Job"), None)
            if job:
                self.owner_job[key] = job

    def _table(self, kind: str) -> dict[str, Any]:
        return {"Node": self.nodes, "Pod": self.pods, "PodGroup": self.podgroups, "Queue": self.queues,
                "PriorityClass": self.priority_classes}[kind]

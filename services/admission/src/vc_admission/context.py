"""SHELL: the state admission rules read, kept from the shared cache (queues, and who uses each queue).

Before a rule runs, `prepare()` reads any queue the object names that the cache has not seen yet
straight from the store, so a job submitted a millisecond after its queue is not refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from vc_core.errors import NotFound
from vc_core.store import ObjectStore
from vc_proto.batch import Job
from vc_proto.kinds import KubeObject
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.vocabulary import DEFAULT_QUEUE
from vc_runtime.informer import Informer
from vc_validation import ResourceGroup

MAX_QUEUE_DEPTH = 5


class CacheContext:
    def __init__(self, store: ObjectStore, *, scheduler_names: tuple[str, ...] = ("volcano",)) -> None:
        self._store = store
        self._users: Counter[str] = Counter()
        self.queue_informer = Informer(store, Queue)
        self.jobs = Informer(store, Job, on_change=lambda old, new: self._count(old, new))
        self.podgroups = Informer(store, PodGroup, on_change=lambda old, new: self._count(old, new))
        self._scheduler_names = scheduler_names

    # -- AdmissionContext ------------------------------------------------------------------------------
    @property
    def queues(self) -> Mapping[str, Queue]:
        return {name: q for (_, name), q in self.queue_informer.items.items()}

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return self._scheduler_names

    @property
    def max_queue_depth(self) -> int:
        return MAX_QUEUE_DEPTH

    @property
    def resource_groups(self) -> tuple[ResourceGroup, ...]:
        return ()

    @property
    def queue_allocation_gate(self) -> bool:
        return False

    def queue_has_workloads(self, name: str) -> bool:
        return self._users[name] > 0

    def namespace_annotations(self, namespace: str) -> Mapping[str, str]:
        return {}  # the embedded store has no Namespace objects

    # -- shell -------------------------------------------------------------------------------------------
    def _count(self, old: Job | PodGroup | None, new: Job | PodGroup | None) -> None:
        if old is not None:
            self._users[_queue_of(old)] -= 1
        if new is not None:
            self._users[_queue_of(new)] += 1

    async def prepare(self, obj: KubeObject) -> None:
        """Read through to the store for the queues this object names that the cache lacks."""
        names = {_queue_of(obj)} if isinstance(obj, Job | PodGroup) else set()
        if isinstance(obj, Queue):
            names.add(obj.metadata.name or "")
            parent = obj.spec.parent if obj.spec else None
            while parent and parent not in names and len(names) <= MAX_QUEUE_DEPTH + 1:
                names.add(parent)
                known = self.queue_informer.get(None, parent) or await self._fetch(parent)
                parent = known.spec.parent if known and known.spec else None
        for name in names:
            if name and self.queue_informer.get(None, name) is None:
                await self._fetch(name)

    async def _fetch(self, name: str) -> Queue | None:
        try:
            queue = await self._store.get(Queue, None, name)
        except NotFound:
            return None
        self.queue_informer.remember(queue)
        return queue


def _queue_of(obj: KubeObject) -> str:
    spec = getattr(obj, "spec", None)
    return (getattr(spec, "queue", None) if spec is not None else None) or DEFAULT_QUEUE

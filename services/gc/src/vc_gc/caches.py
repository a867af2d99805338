"""gc's view: jobs, and every dependent kind indexed by its controller owner.

Changes become owner keys for the dispatcher: a job's every change (its TTL may now run), an owner's
deletion (its dependents are orphans now), a dependent's arrival (its owner may already be gone).
Updates of a dependent submit nothing: they cannot make it an orphan.
"""

from __future__ import annotations

from collections.abc import Callable

from vc_core.store import ObjectStore
from vc_gc.logic.owners import DEPENDENT_KINDS, OwnerKey, owner_key
from vc_proto.batch import Job
from vc_proto.kinds import KINDS, KubeObject
from vc_runtime.informer import Informer

DependentKey = tuple[str, str, str]  # (kind, namespace, name)


def identity(obj: KubeObject) -> tuple[str, str, str]:
    return (type(obj).__name__, obj.metadata.namespace or "", obj.metadata.name or "")


class GcCaches:
    def __init__(self, store: ObjectStore, *, submit: Callable[[OwnerKey], None]) -> None:
        self._submit = submit
        self.jobs: Informer[Job] = Informer(store, Job, on_change=self._job_changed)
        self.dependents: dict[str, Informer[KubeObject]] = {
            kind: Informer(store, KINDS[kind].type, on_change=self._dependent_changed) for kind in DEPENDENT_KINDS
        }
        self._by_owner: dict[OwnerKey, set[DependentKey]] = {}

    @property
    def informers(self) -> list[Informer[KubeObject]]:
        return [self.jobs, *self.dependents.values()]  # type: ignore[list-item]

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self.informers)

    def owner_keys(self) -> list[OwnerKey]:
        return [*(identity(job) for job in self.jobs.items.values()), *self._by_owner]

    def cached_owner(self, key: OwnerKey) -> KubeObject | None:
        """The owner from our caches when we watch its kind (Job, Pod); None when unknown or absent."""
        kind, namespace, name = key
        informer = self.jobs if kind == "Job" else self.dependents.get(kind)
        return informer.get(namespace, name) if informer is not None else None

    def dependents_of(self, key: OwnerKey) -> list[KubeObject]:
        found = (self.dependents[kind].get(ns, name) for kind, ns, name in self._by_owner.get(key, ()))
        return [obj for obj in found if obj is not None]

    def _job_changed(self, old: Job | None, new: Job | None) -> None:
        job = new or old
        assert job is not None
        self._submit(identity(job))

    def _dependent_changed(self, old: KubeObject | None, new: KubeObject | None) -> None:
        if old is not None:
            self._index(old, add=False)
        if new is not None:
            self._index(new, add=True)
        if old is None and new is not None and (key := owner_key(new)) is not None:
            self._submit(key)
        if new is None and old is not None:
            self._submit(identity(old))  # a deleted pod may own a PodGroup (podgroup controller)

    def _index(self, obj: KubeObject, *, add: bool) -> None:
        key = owner_key(obj)
        if key is None:
            return
        members = self._by_owner.setdefault(key, set())
        if add:
            members.add(identity(obj))
            return
        members.discard(identity(obj))
        if not members:
            del self._by_owner[key]

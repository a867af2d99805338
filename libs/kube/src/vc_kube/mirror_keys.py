"""The KV key the relay mirrors each object of a kind under.

Most kinds' key is a function of namespace and name. A pod's also carries its PodGroup's shard
(vc_proto.pod_shards), computed from the pod, and the apiserver tells a deletion by name only, and lets
a pod's group-name annotation be written after its creation (the embedded store refuses that). So the
key each pod was last mirrored under is remembered: its deletion reaches that key, and a pod whose
group changed is moved (its old key deleted) instead of being left under both. The memory this takes
is one entry per pod (about 150 bytes: 150 MB at 1,000,000 pods).
"""

from __future__ import annotations

from vc_bus.objects import storage_key
from vc_proto import subjects
from vc_proto.kinds import KubeObject

Name = tuple[str | None, str]


class MirrorKeys:
    def __init__(self, kind: str) -> None:
        self._remembers = kind == "Pod"
        self._by_name: dict[Name, str] = {}

    def known(self, key: str) -> None:
        """A key found in the bucket (mirrored by an earlier run)."""
        if self._remembers:
            self._by_name[subjects.split_key(key)] = key

    def put(self, namespace: str | None, name: str, obj: KubeObject | None) -> tuple[str | None, str | None]:
        """(the key to write `obj` under, the key it was under before when that is another), for a version
        of the object; without `obj` (undecodable) the key it is under now, or None when that is unknown."""
        if not self._remembers:
            return (storage_key(obj) if obj is not None else subjects.object_key(namespace, name)), None
        before = self._by_name.get((namespace, name))
        if obj is None:
            return before, None
        key = self._by_name[(namespace, name)] = storage_key(obj)
        return key, (before if before not in (None, key) else None)

    def delete(self, namespace: str | None, name: str) -> str | None:
        """The key to delete for the object's deletion (None: a pod never mirrored, nothing to delete)."""
        if not self._remembers:
            return subjects.object_key(namespace, name)
        return self._by_name.pop((namespace, name), None)

    def forget(self, key: str) -> None:
        """`key` was deleted for an object the apiserver no longer has."""
        if self._remembers and self._by_name.get(subjects.split_key(key)) == key:
            del self._by_name[subjects.split_key(key)]

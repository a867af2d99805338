"""Ownership as the Kubernetes garbage collector sees it: a dependent belongs to its controller owner,
and is an orphan once no object with that owner's uid exists any more."""

from __future__ import annotations

from typing import Final

from vc_proto.core import Pod
from vc_proto.kinds import KINDS, KubeObject
from vc_proto.meta import OwnerReference
from vc_proto.vocabulary import PodPhase

# (kind, namespace, name) of an owner.
OwnerKey = tuple[str, str, str]
# What a job (through its plugins and volumes[].volumeClaim) or the podgroup controller creates, and gc
# cascades to.
DEPENDENT_KINDS: Final = (
    "Pod",
    "PodGroup",
    "Service",
    "ConfigMap",
    "Secret",
    "NetworkPolicy",
    "PersistentVolumeClaim",
)


def controller_ref(obj: KubeObject) -> OwnerReference | None:
    return next((ref for ref in obj.metadata.owner_references or () if ref.controller), None)


def is_known_owner(ref: OwnerReference) -> bool:
    """Tephra stores the owner's kind, so its absence can be proven (a ReplicaSet's cannot)."""
    row = KINDS.get(ref.kind)
    return row is not None and row.namespaced and row.api_version == ref.api_version


def owner_key(obj: KubeObject) -> OwnerKey | None:
    """The controller owner this dependent hangs from, when gc can check that owner."""
    ref = controller_ref(obj)
    if ref is None or not is_known_owner(ref) or not obj.metadata.namespace:
        return None
    return (ref.kind, obj.metadata.namespace, ref.name)


def is_orphan(dependent: KubeObject, owner: KubeObject | None) -> bool:
    """The owner named by the dependent's controller ref is gone, or was replaced (another uid)."""
    ref = controller_ref(dependent)
    if ref is None:
        return False
    return owner is None or owner.metadata.uid != ref.uid


def delete_gracefully(obj: KubeObject) -> bool:
    """A finished pod is removed at once; a live one is stopped by its node first."""
    if not isinstance(obj, Pod):
        return True
    phase = obj.status.phase if obj.status else None
    return phase not in (PodPhase.SUCCEEDED, PodPhase.FAILED)

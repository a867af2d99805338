"""Pure helpers shared by every store adapter: names, stamping on create, graceful pod deletion."""

from __future__ import annotations

import re
import secrets
import string
import uuid
from datetime import UTC, datetime
from typing import TypeVar

import msgspec

from vc_core.errors import InvalidObject
from vc_core.times import rfc3339
from vc_proto import subjects
from vc_proto.core import Pod, PodStatus
from vc_proto.kinds import KINDS, KubeObject
from vc_proto.meta import ObjectMeta
from vc_proto.pod_shards import group_of, shard_of
from vc_proto.vocabulary import GROUP_NAME_ANNOTATION

ObjT = TypeVar("ObjT", bound=KubeObject)

MAX_NAME_LENGTH = 253
MAX_NAMESPACE_LENGTH = 63
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUFFIX_ALPHABET = string.ascii_lowercase + string.digits


def now_rfc3339() -> str:
    return rfc3339(datetime.now(UTC))


def check_identity(kind: str, namespace: str | None, name: str) -> None:
    """Names are bounded DNS subdomains, namespaces DNS labels; scope must match the kind."""
    row = KINDS[kind]
    if not name or len(name) > MAX_NAME_LENGTH or not _DNS_SUBDOMAIN.match(name):
        raise InvalidObject(
            "metadata.name",
            "dns-subdomain",
            f"{name!r} must be a lowercase RFC 1123 subdomain of at most 253 characters",
        )
    if row.namespaced:
        if not namespace or len(namespace) > MAX_NAMESPACE_LENGTH or not _DNS_LABEL.match(namespace):
            raise InvalidObject(
                "metadata.namespace",
                "dns-label",
                f"{namespace!r} must be a lowercase RFC 1123 label of at most 63 characters",
            )
    elif namespace:
        raise InvalidObject("metadata.namespace", "cluster-scoped", f"{kind} is cluster-scoped and takes no namespace")


def kind_name(obj: KubeObject) -> str:
    return type(obj).__name__


def identity(obj: KubeObject) -> tuple[str, str | None, str]:
    meta = obj.metadata
    namespace = meta.namespace if KINDS[kind_name(obj)].namespaced else None
    return kind_name(obj), namespace, meta.name or ""


def storage_key(obj: KubeObject) -> str:
    """The KV key `obj` is kept under: `<namespace>.<name>`, a pod's with its PodGroup's shard between."""
    _, namespace, name = identity(obj)
    if isinstance(obj, Pod):
        return subjects.pod_key(namespace or "", shard_of(obj), name)
    return subjects.object_key(namespace, name)


def name_filter(kind: str, namespace: str | None, name: str) -> str:
    """The key, or for a pod (whose shard a name alone does not tell) the keys, `namespace/name` may be under."""
    if kind == "Pod":
        return subjects.pod_name_filter(namespace or "", name)
    return subjects.object_key(namespace, name)


def group_changed(obj: KubeObject) -> InvalidObject:
    """The refusal of an update that would move a pod to another PodGroup than the stored one: its key
    is its group's shard (vc_proto.pod_shards), fixed when it is created."""
    name = obj.metadata.name or ""
    where = f"{obj.metadata.namespace}/{name}" if obj.metadata.namespace else name
    return InvalidObject(
        f"metadata.annotations[{GROUP_NAME_ANNOTATION}]",
        "immutable",
        f"a pod's PodGroup is fixed when it is created; {where} names another"
        " (its group-name annotation, or its controlling owner while it has none)",
    )


def moves_group(stored: KubeObject, obj: KubeObject) -> bool:
    """Whether `obj`, an update of the same pod as `stored`, names another PodGroup."""
    return (
        isinstance(stored, Pod)
        and isinstance(obj, Pod)
        and stored.metadata.uid == obj.metadata.uid
        and group_of(stored) != group_of(obj)
    )


def with_meta(obj: ObjT, **changes: object) -> ObjT:
    return msgspec.structs.replace(obj, metadata=msgspec.structs.replace(obj.metadata, **changes))


def generated_name(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


def stamp_new(obj: ObjT, *, now: str) -> ObjT:
    """What an API server fills on create: name from generateName, uid, creationTimestamp, generation."""
    meta: ObjectMeta = obj.metadata
    name = meta.name or (generated_name(meta.generate_name) if meta.generate_name else None)
    namespace = meta.namespace
    if KINDS[kind_name(obj)].namespaced and not namespace:
        namespace = "default"
    if isinstance(obj, Pod) and not (obj.status and obj.status.phase):
        # The API server starts every pod in phase Pending; so does the embedded store.
        obj = msgspec.structs.replace(obj, status=msgspec.structs.replace(obj.status or PodStatus(), phase="Pending"))
    return with_meta(
        obj,
        name=name,
        namespace=namespace,
        uid=meta.uid or str(uuid.uuid4()),
        creation_timestamp=meta.creation_timestamp or now,
        generation=meta.generation or 1,
        resource_version=None,
        deletion_timestamp=None,
    )


def needs_graceful_delete(obj: KubeObject) -> bool:
    """A pod on a node that is still running must be stopped by its node first (kubelet semantics)."""
    if not isinstance(obj, Pod) or obj.spec is None or not obj.spec.node_name:
        return False
    phase = obj.status.phase if obj.status else None
    return phase not in ("Succeeded", "Failed")


def mark_deleting(obj: ObjT, *, now: str) -> ObjT:
    grace = 30
    if isinstance(obj, Pod) and obj.spec and obj.spec.termination_grace_period_seconds is not None:
        grace = obj.spec.termination_grace_period_seconds
    return with_meta(
        obj, deletion_timestamp=obj.metadata.deletion_timestamp or now, deletion_grace_period_seconds=grace
    )

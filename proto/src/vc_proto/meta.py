"""ObjectMeta and its parts (meta/v1), in Kubernetes JSON shape."""

from __future__ import annotations

from vc_proto.base import Raw, Wire


class OwnerReference(Wire, frozen=True, kw_only=True):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(Wire, frozen=True, kw_only=True):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[Raw] | None = None
    self_link: str | None = None


class LabelSelectorRequirement(Wire, frozen=True, kw_only=True):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(Wire, frozen=True, kw_only=True):
    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None

"""bus.volcano.sh/v1alpha1 Command: an imperative request (AbortJob, OpenQueue...) executed once."""

from __future__ import annotations

from typing import Final

from vc_proto.base import Wire
from vc_proto.meta import ObjectMeta, OwnerReference

BUS_V1ALPHA1: Final = "bus.volcano.sh/v1alpha1"


class Command(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Command"):
    api_version: str
    metadata: ObjectMeta
    action: str | None = None
    target: OwnerReference | None = None
    reason: str | None = None
    message: str | None = None

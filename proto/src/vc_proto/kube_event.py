"""core/v1 Event: what `kubectl get events` and `kubectl describe` show about an object.

Services record them for Jobs, PodGroups, Queues and Pods with Volcano's reasons (vc_core.kube_events
decides which and aggregates repeats). The embedded store keeps them in their own bucket; with the kube
backend they are the apiserver's Events. Only the fields client-go's recorder fills are typed here.
"""

from __future__ import annotations

from typing import Final

from vc_proto.base import Wire
from vc_proto.meta import ObjectMeta

NORMAL: Final = "Normal"
WARNING: Final = "Warning"


class ObjectReference(Wire, frozen=True, kw_only=True):
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    api_version: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class EventSource(Wire, frozen=True, kw_only=True):
    component: str | None = None
    host: str | None = None


class Event(Wire, frozen=True, kw_only=True, tag_field="kind", tag="Event"):
    api_version: str
    metadata: ObjectMeta
    involved_object: ObjectReference | None = None  # required by the apiserver; always set by the recorder
    reason: str | None = None
    message: str | None = None
    source: EventSource | None = None
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    count: int | None = None
    type: str | None = None
    reporting_component: str | None = None
    reporting_instance: str | None = None

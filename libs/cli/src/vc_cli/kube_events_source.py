"""The Kubernetes Events about what `vcctl job view` / `describe` shows: an `EventSource` for
vc_cli.commands.describe.

A job's page shows the Events about the Job, its PodGroup (`Unschedulable` with the why-message) and
its pods; a PodGroup's and a Queue's the Events about them. They come from the store: the embedded
store's Event kind, or the apiserver's core/v1 Events when vcctl talks to Kubernetes. A fact that is
both in the history and a Kubernetes Event is shown once, as the Event (with its count).
"""

from __future__ import annotations

from vc_cli.client import Tephra
from vc_cli.describe import DescribedEvent
from vc_core.errors import VcError
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.kube_event import WARNING, Event
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.vocabulary import JOB_NAME_KEY

# Where Events about cluster-scoped objects (Queues) are kept (vc_runtime.event_recorder).
CLUSTER_SCOPED_NAMESPACE = "default"


async def kube_events_source(tephra: Tephra, obj: Job | Queue | PodGroup) -> list[DescribedEvent] | str:
    """The Kubernetes Events about `obj` (and, for a Job, about its PodGroup and pods), oldest first."""
    meta = obj.metadata
    namespace = meta.namespace if not isinstance(obj, Queue) else CLUSTER_SCOPED_NAMESPACE
    try:
        events, _ = await tephra.store.list(Event, namespace)
        about = {(type(obj).__name__, meta.name or "")}
        if isinstance(obj, Job):
            about |= await _owned_by(tephra, obj)
    except VcError as exc:
        return f"Kubernetes Events unavailable: {exc}"
    except Exception as exc:  # a store that cannot list Events here (permissions, an older server)
        return f"Kubernetes Events unavailable: {exc!r}"
    mine = [e for e in events if _involves(e, about, meta.uid if not isinstance(obj, Queue) else None, obj)]
    return sorted((_described(e) for e in mine), key=lambda e: e.last_seen)


def without_history_repeats(events: list[DescribedEvent], kube: list[DescribedEvent]) -> list[DescribedEvent]:
    """`events` less the history lines a Kubernetes Event of `kube` already says (same reason, and the
    history line ends with the Event's message: the history prefixes whose it is and the phase)."""
    said = [(k.reason, k.message) for k in kube]
    kube_ids = {id(k) for k in kube}
    return [e for e in events if id(e) in kube_ids or not any(e.reason == r and e.message.endswith(m) for r, m in said)]


async def _owned_by(tephra: Tephra, job: Job) -> set[tuple[str, str]]:
    namespace, uid = job.metadata.namespace, job.metadata.uid
    groups, _ = await tephra.store.list(PodGroup, namespace)
    pods, _ = await tephra.store.list(Pod, namespace)
    owned = {
        ("PodGroup", pg.metadata.name or "")
        for pg in groups
        if any(o.kind == "Job" and o.uid == uid for o in pg.metadata.owner_references or [])
    }
    owned |= {
        ("Pod", p.metadata.name or "") for p in pods if (p.metadata.labels or {}).get(JOB_NAME_KEY) == job.metadata.name
    }
    return owned


def _involves(event: Event, about: set[tuple[str, str]], uid: str | None, obj: Job | Queue | PodGroup) -> bool:
    ref = event.involved_object
    if ref is None or (ref.kind or "", ref.name or "") not in about:
        return False
    # An Event about an earlier object of the same name (deleted, created again) is not this one's.
    return not (uid and ref.kind == type(obj).__name__ and ref.uid and ref.uid != uid)


def _described(event: Event) -> DescribedEvent:
    first = event.first_timestamp or event.last_timestamp or event.metadata.creation_timestamp or ""
    source = (event.source.component if event.source else None) or event.reporting_component or ""
    return DescribedEvent(
        type=event.type or WARNING,
        reason=event.reason or "",
        first_seen=first,
        last_seen=event.last_timestamp or first,
        source=source,
        message=event.message or "",
        count=event.count or 1,
    )

"""`describe` pages for a job, a queue and a PodGroup, in kubectl describe's shape: the object's key
fields, its status and conditions, the objects related to it, and an Events section at the end.

Pure: the commands gather the objects (commands/describe.py) and this module lays them out. Events are
`DescribedEvent`s from whichever sources the command has (today the object's history on VC_EVT; see
`history_events`), aggregated like kubectl's (`5m (x3 over 10m)`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from vc_cli.output import age, render_table
from vc_core.kube_events import component_of
from vc_core.why_pending import readable
from vc_proto.batch import Job
from vc_proto.core import Pod
from vc_proto.events import DomainEvent
from vc_proto.scheduling import PodGroup, Queue
from vc_proto.vocabulary import JOB_TYPE_KEY

MAX_RELATED_ROWS: Final = 20  # pods or jobs listed under an object; the rest are counted
MAX_EVENTS: Final = 30
PODGROUP_PHASES: Final = ("Inqueue", "Pending", "Running", "Unknown", "Completed")
_WARNING_WORDS: Final = ("fail", "unschedulable", "evict", "error", "kill", "abort", "notready", "backoff", "lost")


@dataclass(frozen=True, slots=True)
class DescribedEvent:
    """One line of the Events section (kubectl's Type, Reason, Age, From, Message)."""

    type: str  # Normal or Warning
    reason: str
    first_seen: str  # RFC 3339
    last_seen: str
    source: str
    message: str
    count: int = 1


def history_events(events: Iterable[DomainEvent], *, about: tuple[str, str] | None = None) -> list[DescribedEvent]:
    """History events as describe shows them; runs of the same reason, source and message become one
    line with a count. `about` is the described object's (kind, name): other objects' events (a job's
    pods and tasks) say whose they are."""
    out: list[DescribedEvent] = []
    for e in events:
        described = DescribedEvent(
            _event_type(e), e.reason, e.occurred_at, e.occurred_at, component_of(e.source), _event_message(e, about)
        )
        last = out[-1] if out else None
        if last and (last.reason, last.source, last.message, last.type) == (
            described.reason,
            described.source,
            described.message,
            described.type,
        ):
            out[-1] = DescribedEvent(
                last.type, last.reason, last.first_seen, e.occurred_at, last.source, last.message, last.count + 1
            )
        else:
            out.append(described)
    return out


def _event_type(e: DomainEvent) -> str:
    reason = e.reason.lower()
    if (e.exit_code not in (None, 0)) or e.phase == "Failed" or any(w in reason for w in _WARNING_WORDS):
        return "Warning"
    return "Normal"


def _event_message(e: DomainEvent, about: tuple[str, str] | None) -> str:
    parts = []
    if about is None or (e.kind, e.name) != about:
        parts.append(f"{e.kind} {e.name}:")
    if e.phase:
        parts.append(f"{e.previous_phase}->{e.phase}" if e.previous_phase else e.phase)
    if e.node:
        parts.append(f"on {e.node}")
    if e.exit_code is not None:
        parts.append(f"exit code {e.exit_code}")
    if e.message:
        parts.append(e.message)
    return " ".join(parts) or "-"


# -- layout helpers ------------------------------------------------------------------------------------
def _fields(pairs: Sequence[tuple[str, object]], indent: int = 0) -> list[str]:
    """`Label:  value` lines with the values aligned, as kubectl describe writes them."""
    width = max((len(label) for label, _ in pairs), default=0) + 2
    pad = "  " * indent
    return [f"{pad}{(label + ':').ljust(width)}{_text(value)}".rstrip() for label, value in pairs]


def _text(value: object) -> str:
    if value is None or value == "" or value == {} or value == []:
        return "<none>"
    return str(value)


def _mapping(values: Mapping[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or "<none>"


def _resources(values: Mapping[str, str | int | float] | None) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted((values or {}).items())) or "<none>"


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], indent: int = 1) -> list[str]:
    """An indented table with a dashed line under its header, as kubectl describe prints Events."""
    dashes = ["-" * len(h) for h in headers]
    return ["  " * indent + line for line in render_table(headers, [dashes, *rows])]


def _created(timestamp: str | None, now: datetime | None) -> str:
    return f"{timestamp} ({age(timestamp, now)} ago)" if timestamp else "<unknown>"


def _metadata(obj: Job | Queue | PodGroup, now: datetime | None) -> list[tuple[str, object]]:
    meta = obj.metadata
    pairs: list[tuple[str, object]] = [("Name", meta.name)]
    if meta.namespace:
        pairs.append(("Namespace", meta.namespace))
    pairs += [
        ("Labels", _mapping(meta.labels)),
        ("Annotations", _mapping(meta.annotations)),
        ("API Version", obj.api_version),
        ("Kind", type(obj).__name__),
        ("Created", _created(meta.creation_timestamp, now)),
        ("UID", meta.uid),
        ("Resource Version", meta.resource_version),
    ]
    if meta.deletion_timestamp:
        pairs.append(("Deleting Since", meta.deletion_timestamp))
    return pairs


def events_section(
    events: Sequence[DescribedEvent], now: datetime | None = None, *, note: str | None = None
) -> list[str]:
    """kubectl's Events table (the most recent MAX_EVENTS, oldest first), or `Events:  <none>`."""
    if not events:
        return ["Events:  <none>" + (f" ({note})" if note else "")]
    shown = events[-MAX_EVENTS:]
    rows = []
    for e in shown:
        when = age(e.last_seen, now)
        if e.count > 1:
            when = f"{when} (x{e.count} over {age(e.first_seen, now)})"
        rows.append([e.type, e.reason, when, e.source, e.message])
    header = "Events:" + (f"  (the last {len(shown)} of {len(events)})" if len(events) > len(shown) else "")
    return [header, *_table(["Type", "Reason", "Age", "From", "Message"], rows)]


def _more(total: int, shown: int, what: str) -> list[str]:
    return [f"  ... and {total - shown} more {what}"] if total > shown else []


def _pod_rows(pods: Sequence[Pod], now: datetime | None) -> list[list[object]]:
    rows: list[list[object]] = []
    for p in sorted(pods, key=lambda p: p.metadata.name or "")[:MAX_RELATED_ROWS]:
        phase = (
            "Terminating" if p.metadata.deletion_timestamp else ((p.status.phase if p.status else None) or "Pending")
        )
        rows.append(
            [
                p.metadata.name,
                phase,
                (p.spec.node_name if p.spec else None) or "<none>",
                age(p.metadata.creation_timestamp, now),
            ]
        )
    return rows


def _pods_section(pods: Sequence[Pod], now: datetime | None) -> list[str]:
    if not pods:
        return ["Pods:  <none>"]
    return [
        "Pods:",
        *_table(["Name", "Status", "Node", "Age"], _pod_rows(pods, now)),
        *_more(len(pods), MAX_RELATED_ROWS, "pods"),
    ]


def why_pending(pg: PodGroup) -> str | None:
    """The scheduler's latest Unschedulable verdict, explanation first, while the PodGroup still waits."""
    st = pg.status
    if st is not None and st.phase not in (None, "", "Pending", "Inqueue"):
        return None
    current = [c for c in (st.conditions if st else None) or [] if c.type == "Unschedulable" and c.status == "True"]
    if not current:
        return None
    latest = max(current, key=lambda c: c.last_transition_time or "")
    return readable(latest.message or latest.reason or "")


def _podgroup_conditions(pg: PodGroup) -> list[str]:
    conditions = sorted((pg.status.conditions if pg.status else None) or [], key=lambda c: c.last_transition_time or "")
    if not conditions:
        return ["Conditions:  <none>"]
    rows = [
        [c.type or "", c.status or "", c.reason or "", c.last_transition_time or "", c.message or ""]
        for c in conditions
    ]
    return ["Conditions:", *_table(["Type", "Status", "Reason", "Last Transition", "Message"], rows)]


# -- job -------------------------------------------------------------------------------------------------
def describe_job(
    job: Job,
    *,
    podgroup: PodGroup | None,
    pods: Sequence[Pod],
    events: Sequence[DescribedEvent],
    now: datetime | None = None,
    events_note: str | None = None,
) -> list[str]:
    spec, st = job.spec, job.status
    lines = _fields(_metadata(job, now))
    policies = ", ".join(
        f"{p.event or ','.join(p.events or []) or f'exit code {p.exit_code}'} -> {p.action}"
        for p in (spec.policies if spec else None) or []
    )
    lines.append("Spec:")
    lines += _fields(
        [
            ("Queue", spec.queue if spec else None),
            ("Scheduler Name", spec.scheduler_name if spec else None),
            ("Job Type", (job.metadata.labels or {}).get(JOB_TYPE_KEY, "Batch")),
            ("Min Available", spec.min_available if spec else None),
            ("Max Retry", (spec.max_retry if spec else None) or 3),
            ("Plugins", ", ".join(sorted((spec.plugins if spec else None) or {}))),
            ("Policies", policies),
            ("Priority Class", spec.priority_class_name if spec else None),
            (
                "TTL After Finished",
                f"{spec.ttl_seconds_after_finished}s" if spec and spec.ttl_seconds_after_finished is not None else None,
            ),
        ],
        indent=1,
    )
    state = st.state if st else None
    lines.append("Status:")
    lines += _fields(
        [
            ("Phase", (state.phase if state else None) or "Pending"),
            ("Reason", state.reason if state else None),
            ("Message", state.message if state else None),
            ("Since", state.last_transition_time if state else None),
            ("Min Available", (st.min_available if st else None) or 0),
            (
                "Pods",
                ", ".join(
                    f"{n} {f.title()}"
                    for f in ("pending", "running", "succeeded", "failed", "terminating", "unknown")
                    if (n := getattr(st, f, None) or 0)
                )
                if st
                else None,
            ),
            ("Retry Count", (st.retry_count if st else None) or 0),
            ("Version", (st.version if st else None) or 0),
            ("Running Duration", _running_duration(job, now)),
        ],
        indent=1,
    )
    counts = (st.task_status_count if st else None) or {}
    rows = []
    for task in (spec.tasks if spec else None) or []:
        phases = (counts[task.name].phase if task.name in counts else None) or {}
        minimum = task.min_available if task.min_available is not None else task.replicas or 0
        rows.append(
            [
                task.name,
                task.replicas or 0,
                minimum,
                *(phases.get(p, 0) for p in ("Pending", "Running", "Succeeded", "Failed", "Unknown")),
            ]
        )
    lines += [
        "Tasks:",
        *_table(["Name", "Replicas", "Min", "Pending", "Running", "Succeeded", "Failed", "Unknown"], rows),
    ]
    conditions = (st.conditions if st else None) or []
    if conditions:
        rows = [[c.status or "", c.reason or "", c.last_transition_time or "", c.message or ""] for c in conditions]
        lines += ["Conditions:", *_table(["Status", "Reason", "Last Transition", "Message"], rows)]
    else:
        lines.append("Conditions:  <none>")
    if podgroup is None:
        lines.append("PodGroup:  <none>")
    else:
        phase = (podgroup.status.phase if podgroup.status else None) or "Pending"
        lines.append(f"PodGroup:  {podgroup.metadata.name} ({phase})")
        why = why_pending(podgroup)
        if why:
            lines += _fields([("Why Pending", why)], indent=1)
        lines += ["  " + line for line in _podgroup_conditions(podgroup)]
    lines += _pods_section(pods, now)
    lines += events_section(events, now, note=events_note)
    return lines


def _running_duration(job: Job, now: datetime | None) -> str | None:
    """What the job controller wrote once the job ended; while it runs, how long it has been Running."""
    st = job.status
    state = st.state if st else None
    if st is not None and st.running_duration:
        return st.running_duration
    if state is not None and state.phase == "Running" and state.last_transition_time:
        return age(state.last_transition_time, now)
    return None


# -- queue -----------------------------------------------------------------------------------------------
def describe_queue(
    queue: Queue,
    *,
    podgroups: Sequence[PodGroup],
    jobs: Sequence[Job],
    events: Sequence[DescribedEvent],
    now: datetime | None = None,
    events_note: str | None = None,
) -> list[str]:
    spec, st = queue.spec, queue.status
    lines = _fields(_metadata(queue, now))
    lines.append("Spec:")
    lines += _fields(
        [
            ("Weight", (spec.weight if spec else None) or 1),
            ("Parent", spec.parent if spec else None),
            ("Reclaimable", json.dumps(spec.reclaimable) if spec and spec.reclaimable is not None else None),
            ("Priority", spec.priority if spec else None),
            ("Capability", _resources(spec.capability if spec else None)),
            ("Deserved", _resources(spec.deserved if spec else None)),
            ("Guarantee", _resources(spec.guarantee.resource if spec and spec.guarantee else None)),
            ("Allowed Namespaces", ", ".join((spec.allowed_namespaces if spec else None) or []) or "<all>"),
            ("Dequeue Strategy", spec.dequeue_strategy if spec else None),
        ],
        indent=1,
    )
    lines.append("Status:")
    lines += _fields(
        [
            ("State", (st.state if st else None) or "Open"),
            ("Allocated", _resources(st.allocated if st else None)),
            ("Inqueue Resources", _resources(st.inqueue_resources if st else None)),
        ],
        indent=1,
    )
    counts = {p: 0 for p in PODGROUP_PHASES}
    for pg in podgroups:
        phase = (pg.status.phase if pg.status else None) or "Pending"
        if phase in counts:
            counts[phase] += 1
    lines.append("PodGroups:")
    lines += _table(list(PODGROUP_PHASES), [[counts[p] for p in PODGROUP_PHASES]])
    if jobs:
        rows = [
            [
                j.metadata.namespace,
                j.metadata.name,
                (j.status.state.phase if j.status and j.status.state else None) or "Pending",
                age(j.metadata.creation_timestamp, now),
            ]
            for j in sorted(jobs, key=lambda j: (j.metadata.namespace or "", j.metadata.name or ""))[:MAX_RELATED_ROWS]
        ]
        lines += [
            "Jobs:",
            *_table(["Namespace", "Name", "Phase", "Age"], rows),
            *_more(len(jobs), MAX_RELATED_ROWS, "jobs"),
        ]
    else:
        lines.append("Jobs:  <none>")
    lines += events_section(events, now, note=events_note)
    return lines


# -- podgroup --------------------------------------------------------------------------------------------
def describe_podgroup(
    pg: PodGroup,
    *,
    pods: Sequence[Pod],
    events: Sequence[DescribedEvent],
    now: datetime | None = None,
    events_note: str | None = None,
) -> list[str]:
    spec, st = pg.spec, pg.status
    pairs = _metadata(pg, now)
    owner = next((o for o in pg.metadata.owner_references or [] if o.controller), None)
    pairs.append(("Controlled By", f"{owner.kind}/{owner.name}" if owner else None))
    lines = _fields(pairs)
    lines.append("Spec:")
    lines += _fields(
        [
            ("Queue", (spec.queue if spec else None) or "default"),
            ("Min Member", (spec.min_member if spec else None) or 0),
            (
                "Min Task Member",
                _mapping({k: str(v) for k, v in ((spec.min_task_member if spec else None) or {}).items()}),
            ),
            ("Min Resources", _resources(spec.min_resources if spec else None)),
            ("Priority Class", spec.priority_class_name if spec else None),
        ],
        indent=1,
    )
    lines.append("Status:")
    lines += _fields(
        [
            ("Phase", (st.phase if st else None) or "Pending"),
            ("Running", (st.running if st else None) or 0),
            ("Succeeded", (st.succeeded if st else None) or 0),
            ("Failed", (st.failed if st else None) or 0),
            ("Why Pending", why_pending(pg)),
        ],
        indent=1,
    )
    lines += _podgroup_conditions(pg)
    lines += _pods_section(pods, now)
    lines += events_section(events, now, note=events_note)
    return lines

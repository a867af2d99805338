"""A job's timeline from its history: one lane for the job, one per task, one per pod (bounded).

Each phase an event reports starts a segment that lasts until the lane's next event; a lane's last
segment lasts until `now` while the lane is live, and a terminal fact (a pod exited, was deleted or
evicted; a task completed) is a mark, not a span. Times are the events' `occurredAt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from vc_proto.events import DomainEvent

MAX_POD_LANES: Final = 40
# Phases after which a lane draws nothing more (a task with no pods left is Inactive).
TERMINAL: Final = frozenset(
    {"Succeeded", "Failed", "Completed", "Aborted", "Terminated", "Inactive", "Deleted", "Evicted"}
)
# Pod facts carry no phase of their own for these reasons; the lane shows them as these states.
POD_REASON_PHASE: Final = {
    "PodBound": "Bound",
    "PodDeleted": "Deleted",
    "PodEvicted": "Evicted",
    "PodCreated": "Pending",
}


@dataclass(frozen=True, slots=True)
class Segment:
    phase: str
    start: float  # seconds after the timeline's start
    end: float


@dataclass(frozen=True, slots=True)
class Mark:
    phase: str
    at: float
    title: str


@dataclass(slots=True)
class Lane:
    kind: str  # Job, Task or Pod
    label: str
    task: str = ""
    segments: list[Segment] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Timeline:
    start: datetime | None
    span: float  # seconds drawn, at least 1
    lanes: list[Lane]
    hidden_pods: int

    def pct(self, seconds: float) -> float:
        return min(max(seconds / self.span, 0.0), 1.0) * 100

    @property
    def empty(self) -> bool:
        return not self.lanes

    def ticks(self, count: int = 4) -> list[tuple[float, str, str]]:
        """The time axis: (percent, seconds since the start as `1m30s`, SVG text-anchor) at `count` steps."""
        anchors = ["start", *["middle"] * (count - 1), "end"]
        return [(i * 100 / count, elapsed(self.span * i / count), anchors[i]) for i in range(count + 1)]


def elapsed(seconds: float) -> str:
    """`0s`, `0.5s`, `45s`, `1m30s`, `2h5m`: tenths under ten seconds, then whole seconds in the two
    largest units."""
    if seconds < 10 and round(seconds, 1) != round(seconds):
        return f"{seconds:.1f}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def parse_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _phase_of(event: DomainEvent) -> str | None:
    if event.kind == "Pod":
        return POD_REASON_PHASE.get(event.reason) or event.phase
    if event.kind in ("Job", "Task") and event.reason == "PhaseChanged":
        return event.phase
    return None


def _lane_key(event: DomainEvent) -> tuple[int, str, str] | None:
    if event.kind == "Job":
        return (0, "", event.name)
    if event.kind == "Task":
        return (1, event.task or event.name, "")
    if event.kind == "Pod":
        return (1, event.task or "", event.name)
    return None


def build_timeline(events: Sequence[DomainEvent], *, now: datetime | None) -> Timeline:
    """Lanes in order: the job, then each task followed by its pods; pods beyond MAX_POD_LANES are counted.

    `now` is where live lanes end; None when the job is over, so its timeline ends at its last event.
    """
    timed = [(t, e) for e in events if (t := parse_time(e.occurred_at)) is not None and _lane_key(e) is not None]
    if not timed:
        return Timeline(None, 1.0, [], 0)
    timed.sort(key=lambda pair: pair[0])  # stable: equal times keep stream order
    start = timed[0][0]
    end = timed[-1][0] if now is None else max(now, timed[-1][0])
    span = max((end - start).total_seconds(), 1.0)
    steps: dict[tuple[int, str, str], list[tuple[float, DomainEvent]]] = {}
    for moment, event in timed:
        key = _lane_key(event)
        assert key is not None
        steps.setdefault(key, []).append(((moment - start).total_seconds(), event))
    lanes, hidden = _lanes(steps, span)
    return Timeline(start, span, lanes, hidden)


def _lanes(steps: dict[tuple[int, str, str], list[tuple[float, DomainEvent]]], span: float) -> tuple[list[Lane], int]:
    lanes: list[Lane] = []
    pods = 0
    hidden = 0
    for key in sorted(steps):
        kind_rank, task, pod = key
        is_pod = kind_rank == 1 and pod != ""
        if is_pod and pods >= MAX_POD_LANES:
            hidden += 1
            continue
        pods += is_pod
        kind = "Job" if kind_rank == 0 else ("Pod" if is_pod else "Task")
        lane = Lane(kind=kind, label=pod or task, task=task)
        _draw(lane, steps[key], span)
        if lane.segments or lane.marks:
            lanes.append(lane)
    return lanes, hidden


def _draw(lane: Lane, steps: list[tuple[float, DomainEvent]], span: float) -> None:
    current: tuple[str, float] | None = None
    for at, event in steps:
        phase = _phase_of(event)
        if phase is None:
            continue
        if current is not None and current[0] != phase:
            lane.segments.append(Segment(current[0], current[1], at))
            current = None
        if phase in TERMINAL:
            lane.marks.append(Mark(phase, at, _title(event)))
        elif current is None:
            current = (phase, at)
    if current is not None:
        lane.segments.append(Segment(current[0], current[1], span))


def _title(event: DomainEvent) -> str:
    parts = [event.occurred_at, event.reason, event.phase or ""]
    if event.exit_code is not None:
        parts.append(f"exit {event.exit_code}")
    if event.message:
        parts.append(event.message)
    return " ".join(p for p in parts if p)

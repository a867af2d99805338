"""sla: jobs that have waited past their SLA go first and are admitted (Volcano sla.go).

The waiting time comes from the PodGroup annotation `volcano.sh/sla-waiting-time` (or the legacy
`sla-waiting-time`), else the plugin argument `sla-waiting-time`; values are Go durations ("1h30m").
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs, Verdict, Vote
from vc_sched_core.framework.model import JobInfo, TaskStatus
from vc_sched_core.framework.session import Session

NAME: Final = "sla"
ANNOTATIONS: Final = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
_UNIT: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)")


def parse_go_duration(text: str) -> timedelta | None:
    text = text.strip()
    if not text or _PART.sub("", text) != "":
        return None
    return timedelta(seconds=sum(float(n) * _UNIT[u] for n, u in _PART.findall(text)))


def parse_timestamp(text: str) -> datetime | None:
    """RFC 3339 as Kubernetes writes it; a timestamp without zone is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class SlaPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        raw = (args or {}).get("sla-waiting-time")
        self.default_wait = parse_go_duration(str(raw)) if raw is not None else None
        self.now: datetime | None = None

    def on_session_open(self, ssn: Session) -> None:
        self.now = ssn.now
        ssn.add_fn(ExtensionPoint.JOB_ORDER, NAME, self.job_order)
        ssn.add_fn(ExtensionPoint.JOB_ENQUEUEABLE, NAME, self.permit_overdue)
        ssn.add_fn(ExtensionPoint.JOB_PIPELINED, NAME, self.permit_overdue)

    def on_session_close(self, ssn: Session) -> None:
        # A job with work left whose deadline is still ahead is admitted or pipelined by time alone.
        now = self._now()
        if now is not None:
            for job in ssn.jobs.values():
                if job.is_pending() or job.count(TaskStatus.PENDING, TaskStatus.PIPELINED):
                    deadline = self.deadline(job)
                    if deadline is not None and deadline > now:
                        ssn.recheck_by(deadline)
        self.now = None

    def deadline(self, job: JobInfo) -> datetime | None:
        """The PodGroup's creation plus its waiting time (memoised on the job: it depends on its PodGroup
        and this plugin's default only)."""
        key = f"sla.deadline:{self.default_wait}"
        if key in job.opening_memo:
            return job.opening_memo[key]  # type: ignore[no-any-return]
        wait = next(
            (parse_go_duration(job.podgroup.annotations[k]) for k in ANNOTATIONS if k in job.podgroup.annotations),
            self.default_wait,
        )
        created = parse_timestamp(job.podgroup.creation) if job.podgroup.creation else None
        deadline = job.opening_memo[key] = created + wait if wait is not None and created is not None else None
        return deadline

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Jobs with a deadline first, earlier deadline first."""
        ldl, rdl = self.deadline(left), self.deadline(right)
        if ldl is None and rdl is None:
            return 0
        if ldl is None or rdl is None:
            return 1 if ldl is None else -1
        return 0 if ldl == rdl else -1 if ldl < rdl else 1

    def _now(self) -> datetime | None:
        now = self.now
        return now.replace(tzinfo=UTC) if now is not None and now.tzinfo is None else now

    def permit_overdue(self, job: JobInfo) -> Verdict:
        deadline = self.deadline(job)
        now = self._now()
        if deadline is None or now is None or now < deadline:
            return Verdict(Vote.ABSTAIN)
        return Verdict(Vote.PERMIT)

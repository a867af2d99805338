"""shuffle: evict the running tasks that VictimTasks plugins select (Volcano shuffle.go)."""

from __future__ import annotations

from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import PluginArgs
from vc_sched_core.framework.model import TaskStatus
from vc_sched_core.framework.session import Session

NAME: Final = "shuffle"


class ShuffleAction:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.args = dict(args or {})

    def execute(self, ssn: Session) -> None:
        running = [t for job in ssn.jobs.values() for t in job.tasks_in(TaskStatus.RUNNING)]
        for victim in ssn.victim_tasks(sorted(running, key=lambda t: t.uid)):
            ssn.evict(victim, "shuffle")

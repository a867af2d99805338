"""conformance: never evict critical system pods (Volcano conformance.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import TaskInfo
from vc_sched_core.framework.session import Session

NAME: Final = "conformance"
CRITICAL_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE: Final = "kube-system"


def is_evictable(task: TaskInfo) -> bool:
    return task.pod.priority_class_name not in CRITICAL_CLASSES and task.namespace != SYSTEM_NAMESPACE


class ConformancePlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        pass

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fn(ExtensionPoint.PREEMPTABLE, NAME, self.evictable)
        ssn.add_fn(ExtensionPoint.RECLAIMABLE, NAME, self.evictable)

    def on_session_close(self, ssn: Session) -> None:
        pass

    @staticmethod
    def evictable(_actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return [task for task in candidates if is_evictable(task)]

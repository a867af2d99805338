"""PlanDraft: what one `decide` call accumulates before it freezes into a Plan.

The state modules and operations (sync, kill) append to it, as Volcano's state functions call the
controller's injected SyncJob/KillJob/KillTarget; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from vc_job_controller.logic.history import HistoryEvent
from vc_job_controller.logic.plan import ObjectRef, ObjectWrite, Plan, PodDeletion
from vc_job_controller.logic.status import StatusDraft
from vc_job_controller.logic.view import DelayedAction, JobView, Request
from vc_job_controller.plugins.interface import JobPlugin, PluginEffects
from vc_proto.batch import JobStatus
from vc_proto.core import Pod
from vc_proto.scheduling import PodGroup


class TargetType(StrEnum):
    TASK = "task"
    POD = "pod"
    PARTITION = "partition"


@dataclass(frozen=True, slots=True)
class Target:
    """What a RestartTask/RestartPod/RestartPartition acts on (Volcano's state.Target)."""

    type: TargetType
    task_name: str
    pod_name: str = ""
    partition: str = ""


@dataclass(slots=True)
class PlanDraft:
    view: JobView
    request: Request
    action: str
    now: datetime
    plugins: list[JobPlugin]
    # Why the action runs, for condition messages: "RestartJob on PodEvicted of pod x (job policy)".
    cause: str = ""
    status: StatusDraft | None = None
    # A kill ran: runningDuration is refreshed (Volcano sets it in killPods).
    killed: bool = False
    pods_to_create: list[Pod] = field(default_factory=list)
    pods_to_delete: list[PodDeletion] = field(default_factory=list)
    podgroup_to_create: PodGroup | None = None
    podgroup_to_update: PodGroup | None = None
    podgroup_to_delete: str | None = None
    objects_to_write: list[ObjectWrite] = field(default_factory=list)
    objects_to_delete: list[ObjectRef] = field(default_factory=list)
    delays_to_schedule: list[DelayedAction] = field(default_factory=list)
    delays_to_cancel: list[str] = field(default_factory=list)
    events: list[HistoryEvent] = field(default_factory=list)

    def apply_effects(self, effects: PluginEffects, draft: StatusDraft) -> None:
        self.objects_to_write.extend(effects.writes)
        self.objects_to_delete.extend(effects.deletes)
        draft.controlled.update(effects.controlled_set)
        for key in effects.controlled_removed:
            draft.controlled.pop(key, None)

    def cancel_delays(self, keys: list[str]) -> None:
        for key in keys:
            if key not in self.delays_to_cancel:
                self.delays_to_cancel.append(key)

    def build(
        self, *, status: JobStatus | None, status_held: bool = False, held_tasks: tuple[tuple[str, str], ...] = ()
    ) -> Plan:
        return Plan(
            action=self.action,
            status=status,
            status_held=status_held,
            held_tasks=held_tasks,
            pods_to_create=tuple(self.pods_to_create),
            pods_to_delete=tuple(self.pods_to_delete),
            podgroup_to_create=self.podgroup_to_create,
            podgroup_to_update=self.podgroup_to_update,
            podgroup_to_delete=self.podgroup_to_delete,
            objects_to_write=tuple(self.objects_to_write),
            objects_to_delete=tuple(self.objects_to_delete),
            delays_to_schedule=tuple(self.delays_to_schedule),
            delays_to_cancel=tuple(self.delays_to_cancel),
            events=tuple(self.events),
        )

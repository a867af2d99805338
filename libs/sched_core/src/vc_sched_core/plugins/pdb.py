"""pdb: victims never break a PodDisruptionBudget (Volcano pdb.go), for preempt, reclaim and shuffle.

Candidates are taken in order; each one a budget of its namespace selects (and has not already counted
among its disrupted pods) spends one of the budget's allowed disruptions, and a candidate that takes a
budget below zero is not a victim. `status.disruptionsAllowed` is the disruption controller's figure; a
budget without it (Tephra runs no disruption controller) is derived as that controller does: the
namespace's running matching pods minus minAvailable, or minus (matching pods - maxUnavailable),
percentages rounded up, never below zero (neither set: none allowed).

Volcano starts every call from the status again, so two preemptors in one session may each take the
one disruption a budget allows; Tephra also counts the pods this session has already evicted (and not
put back), so a budget holds across the whole session.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, Final

from vc_sched_core.framework.interfaces import EventHandler, ExtensionPoint, PluginArgs
from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.session import Session
from vc_sched_core.framework.session_cluster import snapshot_of
from vc_sched_core.plugins.label_selectors import selector_matches
from vc_sched_core.snapshot.cluster import PodDisruptionBudgetObj, PodObj

NAME: Final = "pdb"


def scaled(value: int | str, total: int) -> int:
    """An IntOrString against `total`: an integer as is, "N%" of total rounded up."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.endswith("%") and text[:-1].isdigit():
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text) if text.isdigit() else 0


def selects(pdb: PodDisruptionBudgetObj, pod: PodObj) -> bool:
    """A budget in the pod's namespace whose selector is set, not empty, and matches (pdb.go)."""
    selector = pdb.selector
    if pdb.namespace != pod.namespace or selector is None:
        return False
    if not selector.match_labels and not selector.match_expressions:
        return False
    return bool(pod.labels) and selector_matches(selector, pod.labels)


def disruptions_allowed(pdb: PodDisruptionBudgetObj, pods: Sequence[PodObj]) -> int:
    if pdb.disruptions_allowed is not None:
        return pdb.disruptions_allowed
    matching = [p for p in pods if p.phase not in ("Succeeded", "Failed") and selects(pdb, p)]
    healthy = sum(1 for p in matching if p.phase == "Running" and not p.deleting)
    if pdb.max_unavailable is not None:
        desired = len(matching) - scaled(pdb.max_unavailable, len(matching))
    elif pdb.min_available is not None:
        desired = scaled(pdb.min_available, len(matching))
    else:
        desired = len(matching)  # neither set: Tephra allows no disruption (the conservative reading)
    return max(0, healthy - desired)


class PdbPlugin:
    name: ClassVar[str] = NAME

    def __init__(self, args: PluginArgs | None = None) -> None:
        self.budgets: list[tuple[PodDisruptionBudgetObj, int]] = []
        self.evicted: dict[str, TaskInfo] = {}  # evicted by this session and not put back

    def on_session_open(self, ssn: Session) -> None:
        self.evicted = {}
        ssn.add_event_handler(EventHandler(allocate=self._put_back, deallocate=self._released))
        snapshot = snapshot_of(ssn)
        self.budgets = [(pdb, disruptions_allowed(pdb, snapshot.pods)) for pdb in snapshot.pod_disruption_budgets]
        ssn.add_fn(ExtensionPoint.VICTIM_TASKS, NAME, self.filter)
        ssn.add_fn(ExtensionPoint.RECLAIMABLE, NAME, self.victims)
        ssn.add_fn(ExtensionPoint.PREEMPTABLE, NAME, self.victims)

    def on_session_close(self, ssn: Session) -> None:
        self.budgets = []
        self.evicted = {}

    def _released(self, task: TaskInfo) -> None:
        if task.status == TaskStatus.RELEASING:
            self.evicted[task.uid] = task

    def _put_back(self, task: TaskInfo) -> None:
        self.evicted.pop(task.uid, None)

    def _spends(self, pdb: PodDisruptionBudgetObj, task: TaskInfo) -> bool:
        return selects(pdb, task.pod) and task.pod.name not in pdb.disrupted_pods

    def filter(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        allowed = [count - sum(1 for t in self.evicted.values() if self._spends(pdb, t)) for pdb, count in self.budgets]
        victims = []
        for task in tasks:
            violated = False
            for i, (pdb, _) in enumerate(self.budgets):
                if not self._spends(pdb, task):
                    continue
                allowed[i] -= 1
                violated |= allowed[i] < 0
            if not violated:
                victims.append(task)
        return victims

    def victims(self, actor: TaskInfo, candidates: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self.filter(candidates)

"""A transaction over a session: allocate, pipeline and evict in memory, then commit or discard.

Commit turns the operations into decisions (allocations bind, evictions evict; pipelined tasks stay
in the session). Discard undoes them in reverse order and remembers each task's undone status
(Volcano's LastTransaction), which the gang condition message counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from vc_sched_core.framework.decisions import Evict
from vc_sched_core.framework.model import TaskInfo, TaskStatus
from vc_sched_core.framework.nodes import NodeInfo
from vc_sched_core.framework.session import Session


class Op(Enum):
    ALLOCATE = "allocate"
    PIPELINE = "pipeline"
    EVICT = "evict"


@dataclass(slots=True)
class Operation:
    op: Op
    task: TaskInfo
    previous_status: TaskStatus
    previous_node: str
    reason: str = ""


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    def _record(self, op: Op, task: TaskInfo, reason: str = "") -> None:
        self.operations.append(Operation(op, task, task.status, task.node_name, reason))

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self._record(Op.ALLOCATE, task)
        self.ssn.set_task(task, TaskStatus.ALLOCATED, node.name)
        self.ssn.fire_allocate(task)

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self._record(Op.PIPELINE, task)
        self.ssn.set_task(task, TaskStatus.PIPELINED, node.name)
        self.ssn.fire_allocate(task)

    def evict(self, task: TaskInfo, reason: str) -> None:
        self._record(Op.EVICT, task, reason)
        self.ssn.set_task(task, TaskStatus.RELEASING, task.node_name)
        self.ssn.fire_deallocate(task)

    def discard(self) -> None:
        for operation in reversed(self.operations):
            task = operation.task
            self.ssn.mark_last_transaction(task)
            self.ssn.set_task(task, operation.previous_status, operation.previous_node)
            if operation.op is Op.EVICT:
                self.ssn.fire_allocate(task)
            else:
                self.ssn.fire_deallocate(task)
        self.operations.clear()

    def commit(self) -> None:
        for operation in self.operations:
            task = operation.task
            if operation.op is Op.EVICT:
                self.ssn.decisions.append(Evict(task.key, task.pod.uid, operation.reason))
            elif operation.op is Op.ALLOCATE and task.status == TaskStatus.ALLOCATED:
                self.ssn.dispatch(task)
        self.operations.clear()

    def merge(self, other: Statement) -> None:
        self.operations.extend(other.operations)
        other.operations.clear()

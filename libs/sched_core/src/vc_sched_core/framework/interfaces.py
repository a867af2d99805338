"""Extension points, votes, verdicts and the Plugin/Action protocols (Volcano's framework interfaces)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING, ClassVar, Final, Protocol

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from vc_sched_core.framework.model import TaskInfo
    from vc_sched_core.framework.session import Session


class ExtensionPoint(StrEnum):
    JOB_ORDER = "jobOrder"
    QUEUE_ORDER = "queueOrder"
    VICTIM_QUEUE_ORDER = "victimQueueOrder"
    TASK_ORDER = "taskOrder"
    PRE_PREDICATE = "prePredicate"
    PREDICATE = "predicate"
    NODE_ORDER = "nodeOrder"
    BATCH_NODE_ORDER = "batchNodeOrder"
    PREEMPTABLE = "preemptable"
    RECLAIMABLE = "reclaimable"
    PREEMPTIVE = "preemptive"
    VICTIM_TASKS = "victimTasks"
    JOB_VALID = "jobValid"
    JOB_READY = "jobReady"
    JOB_PIPELINED = "jobPipelined"
    JOB_ENQUEUEABLE = "jobEnqueueable"
    JOB_ENQUEUED = "jobEnqueued"
    JOB_STARVING = "jobStarving"
    OVERUSED = "overused"
    ALLOCATABLE = "allocatable"
    # Tephra's: a gang whose try failed in its hypernode may be tried again in the next one (Volcano's
    # allocate walks the hypernodes itself); fn(job) -> bool, switched with the plugin's predicates.
    HYPERNODE_RETRY = "hyperNodeRetry"


# The conf key that switches each point off for one plugin (Volcano's spellings, `enable`/`enabled` mixed).
# JobValid has no switch in Volcano; JobEnqueueable shares EnabledJobEnqueued.
ENABLE_KEYS: Final[Mapping[ExtensionPoint, str]] = {
    ExtensionPoint.JOB_ORDER: "enableJobOrder",
    ExtensionPoint.QUEUE_ORDER: "enableQueueOrder",
    ExtensionPoint.VICTIM_QUEUE_ORDER: "enableQueueOrder",
    ExtensionPoint.TASK_ORDER: "enableTaskOrder",
    ExtensionPoint.PRE_PREDICATE: "enablePredicate",
    ExtensionPoint.PREDICATE: "enablePredicate",
    ExtensionPoint.HYPERNODE_RETRY: "enablePredicate",
    ExtensionPoint.NODE_ORDER: "enableNodeOrder",
    ExtensionPoint.BATCH_NODE_ORDER: "enableNodeOrder",
    ExtensionPoint.PREEMPTABLE: "enablePreemptable",
    ExtensionPoint.RECLAIMABLE: "enableReclaimable",
    ExtensionPoint.PREEMPTIVE: "enablePreemptive",
    ExtensionPoint.VICTIM_TASKS: "enabledVictim",
    ExtensionPoint.JOB_READY: "enableJobReady",
    ExtensionPoint.JOB_PIPELINED: "enableJobPipelined",
    ExtensionPoint.JOB_ENQUEUEABLE: "enableJobEnqueued",
    ExtensionPoint.JOB_ENQUEUED: "enableJobEnqueued",
    ExtensionPoint.JOB_STARVING: "enableJobStarving",
    ExtensionPoint.OVERUSED: "enabledOverused",
    ExtensionPoint.ALLOCATABLE: "enabledAllocatable",
}
# Keys Volcano accepts that switch points this project does not implement; accepted and ignored.
OTHER_ENABLE_KEYS: Final = frozenset(
    {
        "enableHierarchy",
        "enabledClusterOrder",
        "enableBestNode",
        "enableTargetJob",
        "enableReservedNodes",
        "enabledHyperNodeOrder",
        "enabledSubJobReady",
        "enabledSubJobPipelined",
        "enabledSubJobOrder",
        "enabledHyperNodeGradient",
    }
)


class Vote(IntEnum):
    """Volcano's util.Permit / Abstain / Reject."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


@dataclass(frozen=True, slots=True)
class Verdict:
    """A vote plus, when it blocks, a sentence a user can act on."""

    vote: Vote
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Check:
    """A yes/no answer with the reason for a no (Allocatable)."""

    ok: bool
    reason: str = ""


ALLOWED: Final = Check(True)


@dataclass(frozen=True, slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """Nodes (mask over the rows asked about) failing one predicate, and why.

    `resolvable` is False for Kubernetes' UnschedulableAndUnresolvable: evicting pods cannot help.
    """

    mask: NDArray[np.bool_]
    reason: str
    resolvable: bool = False


@dataclass(frozen=True, slots=True)
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


class Plugin(Protocol):
    name: ClassVar[str]

    def on_session_open(self, ssn: Session) -> None: ...

    def on_session_close(self, ssn: Session) -> None: ...


class Action(Protocol):
    name: ClassVar[str]

    def execute(self, ssn: Session) -> None: ...


PluginArgs = Mapping[str, object]
PluginFactory = Callable[[PluginArgs], Plugin]
ActionFactory = Callable[[PluginArgs], Action]

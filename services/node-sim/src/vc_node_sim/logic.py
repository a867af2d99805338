"""What a simulated kubelet does next with a pod, as a pure function of the pod, its node and the time.

Pending -> Running after a start delay -> Succeeded (exit 0) or Failed (exit code) once the pod's
`sim.tephra.dev/duration` has passed since it started. A deleted pod is removed after its (bounded)
grace period. On a NotReady node, pods are evicted once their not-ready toleration runs out. A duration
or exit code that is not one (a negative duration, `soon`, exit code `-1`) is an error, never a
default: the pod ends Failed at once with reason `Invalid` and the rule it breaks (admission refuses
such pods, and node-sim does not start them; this covers one whose annotations changed while running).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from vc_core.errors import InvalidObject
from vc_core.times import parse_rfc3339
from vc_proto.core import Pod
from vc_proto.vocabulary import SIM_DURATION_ANNOTATION, SIM_EXIT_CODE_ANNOTATION
from vc_validation.simulation import parse_sim_duration, parse_sim_exit_code

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
INVALID = "Invalid"
INVALID_EXIT_CODE = 1  # a pod failed for a bad annotation exits like a process failing its own start


class Step(enum.Enum):
    START = "start"
    FINISH = "finish"
    REMOVE = "remove"
    EVICT = "evict"


@dataclass(frozen=True, slots=True)
class SimConfig:
    start_delay_s: float = 0.2
    # None: pods without a duration annotation run until deleted.
    default_duration_s: float | None = None
    # How long a terminating pod takes to stop, capped by its grace period.
    termination_s: float = 0.0
    # Kubernetes' default not-ready toleration is 300 s; the simulator evicts sooner unless the pod says.
    eviction_delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Next:
    step: Step
    due: float  # epoch seconds
    exit_code: int = 0
    # Why a FINISH fails the pod other than by its exit code (its status reason and message).
    reason: str | None = None
    message: str | None = None


def parse_time(text: str | None) -> float | None:
    """Seconds since the epoch of a stored time; ValueError when it is not one."""
    return parse_rfc3339(text).timestamp() if text else None


def pod_run_time(pod: Pod, cfg: SimConfig) -> float | None:
    """Seconds the pod runs; None means until deleted. Raises InvalidObject for a malformed annotation."""
    text = (pod.metadata.annotations or {}).get(SIM_DURATION_ANNOTATION)
    return cfg.default_duration_s if text is None else parse_sim_duration(text)


def pod_exit_code(pod: Pod) -> int:
    """Raises InvalidObject for a malformed annotation."""
    return parse_sim_exit_code((pod.metadata.annotations or {}).get(SIM_EXIT_CODE_ANNOTATION, "0"))


def not_ready_toleration_s(pod: Pod, default: float) -> float:
    """tolerationSeconds of the pod's NoExecute toleration for the not-ready taint, if it has one."""
    for tol in (pod.spec.tolerations if pod.spec else None) or []:
        if tol.effect not in (None, "NoExecute"):
            continue
        if tol.key == NOT_READY_TAINT or (tol.key is None and tol.operator == "Exists"):
            return float("inf") if tol.toleration_seconds is None else float(tol.toleration_seconds)
    return default


def plan(pod: Pod, *, seen_at: float, node_not_ready_since: float | None, cfg: SimConfig) -> Next | None:
    """The pod's next step and when it is due; None when nothing more happens to it."""
    phase = pod.status.phase if pod.status else None
    deleted = parse_time(pod.metadata.deletion_timestamp)
    if deleted is not None:
        grace = pod.metadata.deletion_grace_period_seconds
        wait = cfg.termination_s if grace is None else min(cfg.termination_s, float(grace))
        return Next(Step.REMOVE, deleted + wait)
    if phase in ("Succeeded", "Failed"):
        return None
    if node_not_ready_since is not None:
        return Next(Step.EVICT, node_not_ready_since + not_ready_toleration_s(pod, cfg.eviction_delay_s))
    started = parse_time(pod.status.start_time if pod.status else None)
    if phase != "Running" or started is None:
        return Next(Step.START, seen_at + cfg.start_delay_s)
    try:
        run_time, exit_code = pod_run_time(pod, cfg), pod_exit_code(pod)
    except InvalidObject as exc:
        return Next(Step.FINISH, started, INVALID_EXIT_CODE, INVALID, f"{exc.field}: {exc.message}")
    if run_time is None:
        return None
    return Next(Step.FINISH, started + run_time, exit_code)

"""dependsOn gating (Volcano's waitDependsOnTaskMeetCondition): a task's pods are created only once
the tasks it depends on are ready."""

from __future__ import annotations

from vc_job_controller.logic.names import pod_name
from vc_job_controller.logic.view import JobView, find_task, pod_phase, replicas
from vc_proto.batch import TaskSpec
from vc_proto.core import Pod
from vc_proto.vocabulary import PodPhase

ITERATION_ANY = "any"


def is_pod_ready(pod: Pod) -> bool:
    """Succeeded, or Running with every container ready."""
    phase = pod_phase(pod)
    if phase == PodPhase.SUCCEEDED:
        return True
    statuses = (pod.status.container_statuses if pod.status else None) or []
    return phase == PodPhase.RUNNING and all(status.ready for status in statuses)


def is_task_ready(view: JobView, task_name: str) -> bool:
    """Ready when at least minAvailable of its pods are ready; a task without minAvailable is ready.
    A dependency naming no task is never ready (admission rejects such jobs)."""
    task = find_task(view.spec, task_name)
    if task is None:
        return False
    if task.min_available is None:
        return True
    names = (pod_name(view.name, task_name, i) for i in range(replicas(task)))
    ready = sum(1 for name in names if name in view.pods and is_pod_ready(view.pods[name]))
    return ready >= task.min_available


def dependencies_met(view: JobView, task: TaskSpec) -> bool:
    depends = task.depends_on
    if depends is None:
        return True
    needed = depends.name or []
    if len(needed) > 1 and depends.iteration == ITERATION_ANY:
        return any(is_task_ready(view, name) for name in needed)
    return all(is_task_ready(view, name) for name in needed)

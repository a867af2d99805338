"""hcclrank plugin (Volcano `distributed-framework/hcclrank`): the `hccl/rankIndex` pod annotation.

Taken from a container's RANK env when another plugin (pytorch) set it, else master pods get their
index and worker pods `replicas(master) + index`. Pods of other tasks, or already annotated, are
left alone. It creates nothing, so it records no controlled resource (as in Volcano).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from msgspec.structs import replace

from vc_job_controller.logic.view import find_task, replicas
from vc_job_controller.plugins.flags import Flag, parse_flags, require_text
from vc_job_controller.plugins.interface import NO_EFFECTS, PluginDeps, PluginEffects, PluginError
from vc_job_controller.plugins.podedit import pod_task, spec_of
from vc_proto.batch import Job, JobSpec
from vc_proto.core import Pod
from vc_proto.vocabulary import TASK_INDEX_KEY

NAME: Final = "hcclrank"
RANK_ANNOTATION: Final = "hccl/rankIndex"
FLAGS: Final = (Flag("master", "master"), Flag("worker", "worker"))


def rank_env(pod: Pod) -> str:
    """The first RANK env value of the pod's containers, "" when none sets it."""
    for container in spec_of(pod).containers or []:
        for env in container.env or []:
            if env.name == "RANK" and env.value:
                return env.value
    return ""


class HcclRankPlugin:
    name: Final = NAME

    def __init__(self, *, master: str, worker: str) -> None:
        self.master = master
        self.worker = worker

    def rank(self, pod: Pod, job: Job) -> str | None:
        from_env = rank_env(pod)
        task = pod_task(pod)
        if from_env or task not in (self.master, self.worker):
            return from_env or None
        index_text = (pod.metadata.labels or {}).get(TASK_INDEX_KEY, "")
        if not index_text.isdigit():
            raise PluginError(NAME, f"pod {pod.metadata.name} has no {TASK_INDEX_KEY} label")
        if task == self.master:
            return index_text
        master = find_task(job.spec or JobSpec(), self.master)
        return str((replicas(master) if master else 0) + int(index_text))

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        annotations = dict(pod.metadata.annotations or {})
        if annotations.get(RANK_ANNOTATION):
            return pod
        rank = self.rank(pod, job)
        if rank is None:
            return pod
        annotations[RANK_ANNOTATION] = rank
        return replace(pod, metadata=replace(pod.metadata, annotations=annotations))

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return NO_EFFECTS

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return NO_EFFECTS

    def on_job_update(self, job: Job) -> PluginEffects:
        return NO_EFFECTS


def build(args: Sequence[str], deps: PluginDeps) -> HcclRankPlugin:
    values = parse_flags(NAME, args, FLAGS)
    return HcclRankPlugin(
        master=require_text(NAME, "master", values["master"]), worker=require_text(NAME, "worker", values["worker"])
    )

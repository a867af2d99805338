"""env plugin (Volcano `plugins/env`): VK_TASK_INDEX and VC_TASK_INDEX = the pod's index in its task."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from vc_job_controller.logic.names import task_index_of
from vc_job_controller.plugins.flags import parse_flags
from vc_job_controller.plugins.interface import NO_EFFECTS, PluginDeps, PluginEffects, mark_added, mark_deleted
from vc_job_controller.plugins.podedit import append_env, edit_containers
from vc_proto.batch import Job
from vc_proto.core import EnvVar, Pod

NAME: Final = "env"
TASK_VK_INDEX: Final = "VK_TASK_INDEX"
TASK_INDEX: Final = "VC_TASK_INDEX"


class EnvPlugin:
    name: Final = NAME

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        index = task_index_of(pod.metadata.name or "")
        env = [EnvVar(name=TASK_VK_INDEX, value=index), EnvVar(name=TASK_INDEX, value=index)]
        return edit_containers(pod, append_env(env))

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_added(NAME, controlled)

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_deleted(NAME, controlled)

    def on_job_update(self, job: Job) -> PluginEffects:
        return NO_EFFECTS


def build(args: Sequence[str], deps: PluginDeps) -> EnvPlugin:
    # env takes no arguments; anything given is a mistake worth reporting.
    parse_flags(NAME, args, ())
    return EnvPlugin()

"""tensorflow plugin (Volcano `distributed-framework/tensorflow`): TF_CONFIG for every container.

`{"cluster":{"ps":[...],"worker":[...],"chief":[...],"evaluator":[...]},"task":{"type":..,"index":..}}`
with hosts `<pod>.<job>:<port>`; empty roles are left out; a one-task, one-replica job gets nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from vc_job_controller.logic import names
from vc_job_controller.logic.view import replicas, task_name, tasks
from vc_job_controller.plugins.flags import Flag, parse_flags, require_port, require_text
from vc_job_controller.plugins.interface import (
    NO_EFFECTS,
    PluginDeps,
    PluginEffects,
    PluginError,
    mark_added,
    mark_deleted,
)
from vc_job_controller.plugins.podedit import append_env, edit_containers, pod_task
from vc_proto.batch import Job, JobSpec
from vc_proto.core import EnvVar, Pod

NAME: Final = "tensorflow"
TF_CONFIG: Final = "TF_CONFIG"
# Go marshals the cluster struct in this field order.
ROLES: Final = ("ps", "worker", "chief", "evaluator")
FLAGS: Final = (
    Flag("ps", "ps"),
    Flag("worker", "worker"),
    Flag("chief", "chief"),
    Flag("evaluator", "evaluator"),
    Flag("port", 2222),
)


class TensorflowPlugin:
    name: Final = NAME

    def __init__(self, *, role_tasks: Mapping[str, str], port: int) -> None:
        # role ("ps", "worker", ...) -> the task name playing it
        self.role_tasks = role_tasks
        self.port = port

    def task_type(self, task: str) -> str:
        """The role a task plays; a task outside the roles keeps its own name (Volcano's getTaskType)."""
        for role in ("chief", "worker", "ps", "evaluator"):
            if self.role_tasks[role] == task:
                return role
        return task

    def cluster_spec(self, job: Job) -> dict[str, list[str]]:
        job_name = job.metadata.name or ""
        cluster: dict[str, list[str]] = {}
        for task in tasks(job.spec or JobSpec()):
            pod_spec = task.template.spec if task.template else None
            hosts = [
                names.host_name(
                    job=job_name,
                    task=task_name(task),
                    index=i,
                    hostname=pod_spec.hostname if pod_spec else None,
                    subdomain=pod_spec.subdomain if pod_spec else None,
                )
                + f":{self.port}"
                for i in range(replicas(task))
            ]
            # Go's switch: the first role naming this task takes it.
            role = next((r for r in ROLES if self.role_tasks[r] == task_name(task)), None)
            if role is not None and hosts:
                cluster[role] = hosts
        return {role: cluster[role] for role in ROLES if role in cluster}

    def tf_config(self, pod: Pod, job: Job) -> str:
        index = names.task_index_of(pod.metadata.name or "")
        if not index.isdigit():
            raise PluginError(NAME, f"pod {pod.metadata.name} has no task index")
        spec = {"cluster": self.cluster_spec(job), "task": {"type": self.task_type(pod_task(pod)), "index": int(index)}}
        return json.dumps(spec, separators=(",", ":"))

    def on_pod_create(self, pod: Pod, job: Job) -> Pod:
        all_tasks = tasks(job.spec or JobSpec())
        if len(all_tasks) == 1 and replicas(all_tasks[0]) == 1:
            return pod
        env = [EnvVar(name=TF_CONFIG, value=self.tf_config(pod, job))]
        return edit_containers(pod, append_env(env), init=False)

    def on_job_add(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_added(NAME, controlled)

    def on_job_delete(self, job: Job, controlled: Mapping[str, str]) -> PluginEffects:
        return mark_deleted(NAME, controlled)

    def on_job_update(self, job: Job) -> PluginEffects:
        return NO_EFFECTS


def build(args: Sequence[str], deps: PluginDeps) -> TensorflowPlugin:
    values = parse_flags(NAME, args, FLAGS)
    role_tasks = {role: require_text(NAME, role, values[role]) for role in ROLES}
    return TensorflowPlugin(role_tasks=role_tasks, port=require_port(NAME, "port", values["port"]))

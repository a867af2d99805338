"""vcctl jobtemplate create|list|get|describe|delete: flow.volcano.sh JobTemplates (a vcjob's spec, kept
to be started by JobFlows)."""

from __future__ import annotations

import argparse

from vc_cli.client import Tephra
from vc_cli.commands import workloads
from vc_cli.listing import Columns
from vc_cli.output import age, render_table
from vc_proto.flow import JobTemplate


def _jobs(template: JobTemplate) -> list[str]:
    return (template.status.job_depends_on_list if template.status else None) or []


COLUMNS: Columns[JobTemplate] = Columns(
    headers=["Name", "Queue", "Jobs", "Age"],
    row=lambda t: [
        t.metadata.name,
        (t.spec.queue if t.spec else None) or "default",
        len(_jobs(t)),
        age(t.metadata.creation_timestamp),
    ],
)


def describe(template: JobTemplate) -> list[str]:
    spec = template.spec
    tasks = [
        [task.name, task.replicas if task.replicas is not None else 1, task.min_available or "-"]
        for task in (spec.tasks if spec else None) or []
    ]
    lines = workloads.field_lines(
        [
            ("Name", template.metadata.name),
            ("Namespace", template.metadata.namespace),
            ("Queue", (spec.queue if spec else None) or "default"),
            ("Scheduler", spec.scheduler_name if spec else None),
            ("Min Available", spec.min_available if spec else None),
            ("Jobs", ", ".join(_jobs(template))),
            ("Created", template.metadata.creation_timestamp),
        ]
    )
    return [*lines, "Tasks:", *("  " + line for line in render_table(["Name", "Replicas", "MinAvailable"], tasks))]


WORKLOAD = workloads.Workload("jobtemplate", JobTemplate, COLUMNS, describe)


def add_parser(sub: argparse._SubParsersAction) -> None:
    workloads.add_verbs(sub, WORKLOAD, help="JobTemplates: vcjob specs that JobFlows start")


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    return await workloads.run(WORKLOAD, tephra, args)

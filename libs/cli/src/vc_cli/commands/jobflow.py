"""vcctl jobflow create|list|get|describe|delete: flow.volcano.sh JobFlows (Volcano's pkg/cli/jobflow)."""

from __future__ import annotations

import argparse

from vc_cli.client import Tephra
from vc_cli.commands import workloads
from vc_cli.listing import Columns
from vc_cli.output import age, render_table
from vc_proto.flow import JobFlow


def _phase(flow: JobFlow) -> str:
    return (flow.status.state.phase if flow.status and flow.status.state else None) or "Pending"


def _progress(flow: JobFlow) -> str:
    done = len((flow.status.completed_jobs if flow.status else None) or [])
    return f"{done}/{len((flow.spec.flows if flow.spec else None) or [])}"


# Volcano's columns (Name, Phase, Age; the namespace under --all-namespaces); -o wide adds the jobs done.
COLUMNS: Columns[JobFlow] = Columns(
    headers=["Name", "Phase", "Age"],
    row=lambda flow: [flow.metadata.name, _phase(flow), age(flow.metadata.creation_timestamp)],
    wide_headers=["Completed", "RetainPolicy"],
    wide_row=lambda flow: [_progress(flow), (flow.spec.job_retain_policy if flow.spec else None) or "retain"],
)


def describe(flow: JobFlow) -> list[str]:
    states = {entry.name: entry.state for entry in (flow.status.job_status_list if flow.status else None) or []}
    rows = []
    for item in (flow.spec.flows if flow.spec else None) or []:
        job = f"{flow.metadata.name}-{item.name}"
        targets = (item.depends_on.targets if item.depends_on else None) or []
        rows.append([item.name, ",".join(targets) or "-", job, states.get(job) or "not created"])
    lines = workloads.field_lines(
        [
            ("Name", flow.metadata.name),
            ("Namespace", flow.metadata.namespace),
            ("Phase", _phase(flow)),
            ("Completed", _progress(flow)),
            ("Job Retain Policy", (flow.spec.job_retain_policy if flow.spec else None) or "retain"),
            ("Created", flow.metadata.creation_timestamp),
        ]
    )
    return [*lines, "Flows:", *("  " + line for line in render_table(["Flow", "DependsOn", "Job", "State"], rows))]


WORKLOAD = workloads.Workload("jobflow", JobFlow, COLUMNS, describe)


def add_parser(sub: argparse._SubParsersAction) -> None:
    workloads.add_verbs(
        sub, WORKLOAD, help="JobFlows: vcjobs from JobTemplates, started as their dependencies complete"
    )


async def run(tephra: Tephra, args: argparse.Namespace) -> int:
    return await workloads.run(WORKLOAD, tephra, args)

"""What one sync of a JobFlow does (Volcano's `syncJobFlow`). Pure.

- A Failed or Terminating flow: nothing (Volcano's states for them do nothing).
- `jobRetainPolicy: delete` and the flow Succeed: delete every job the flow made, and nothing else.
- Otherwise create the job of each flow that has none yet and whose `dependsOn.targets` all have a
  Completed job (a flow without targets starts at once), then write the status from the jobs there are.

A flow whose JobTemplate does not exist (yet) waits: it is named in `missing_templates`, and a
template created later starts it (the template's arrival wakes its flows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from vc_flow_controller.logic.flow_jobs import build_flow_job, flow_job_name
from vc_flow_controller.logic.flow_status import flow_phase, flow_status, is_final
from vc_flow_controller.logic.owners import phase_of
from vc_proto.batch import Job
from vc_proto.flow import FlowPhase, JobFlow, JobFlowStatus, JobTemplate, RetainPolicy
from vc_proto.vocabulary import JobPhase


@dataclass(frozen=True, slots=True)
class FlowPlan:
    create: tuple[Job, ...] = ()
    delete: tuple[Job, ...] = ()
    missing_templates: tuple[str, ...] = ()
    status: JobFlowStatus | None = None  # None: leave the stored status as it is


def plan_flow(flow: JobFlow, jobs: Sequence[Job], templates: Mapping[str, JobTemplate], now: datetime) -> FlowPlan:
    """`jobs`: the jobs this flow controls; `templates`: the JobTemplates of the flow's namespace by name."""
    if is_final(flow):
        return FlowPlan()
    spec_policy = flow.spec.job_retain_policy if flow.spec else None
    if spec_policy == RetainPolicy.DELETE and flow_phase(flow) == FlowPhase.SUCCEED:
        return FlowPlan(delete=tuple(jobs))
    create, missing = _due_jobs(flow, {job.metadata.name or "": job for job in jobs}, templates)
    status = flow_status(flow, jobs, now)
    return FlowPlan(
        create=create,
        missing_templates=missing,
        status=status if status != (flow.status or JobFlowStatus()) else None,
    )


def _due_jobs(
    flow: JobFlow, existing: Mapping[str, Job], templates: Mapping[str, JobTemplate]
) -> tuple[tuple[Job, ...], tuple[str, ...]]:
    name = flow.metadata.name or ""
    create: list[Job] = []
    missing: list[str] = []
    for item in (flow.spec.flows or []) if flow.spec else []:
        template_name = item.name or ""
        if flow_job_name(name, template_name) in existing:
            continue
        targets = (item.depends_on.targets if item.depends_on else None) or []
        if not all(_completed(existing.get(flow_job_name(name, target))) for target in targets):
            continue
        template = templates.get(template_name)
        if template is None:
            missing.append(template_name)
            continue
        create.append(build_flow_job(flow, template))
    return tuple(create), tuple(missing)


def _completed(job: Job | None) -> bool:
    return job is not None and phase_of(job) == JobPhase.COMPLETED

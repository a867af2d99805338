"""The vcjob a JobFlow makes for one of its flows (Volcano's `loadJobTemplateAndSetJob`). Pure.

Named `<flow>-<template>`, in the flow's namespace, with the template's spec; labelled and annotated
`volcano.sh/createdByJobTemplate: <namespace>.<template>` and `volcano.sh/createdByJobFlow:
<namespace>.<flow>`, and controlled by the flow (deleting the flow deletes its jobs). Like Volcano's
controller, a flow's `patch` and `dependsOn.probe` are stored but not applied.
"""

from __future__ import annotations

from vc_flow_controller.logic.owners import reference_to
from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.flow import CREATED_BY_JOB_FLOW, CREATED_BY_JOB_TEMPLATE, JobFlow, JobTemplate
from vc_proto.meta import ObjectMeta


def flow_job_name(flow_name: str, template_name: str) -> str:
    return f"{flow_name}-{template_name}"


def object_string(namespace: str, name: str) -> str:
    """Volcano's `GenerateObjectString`: `<namespace>.<name>`."""
    return f"{namespace}.{name}"


def build_flow_job(flow: JobFlow, template: JobTemplate) -> Job:
    namespace = flow.metadata.namespace or ""
    template_name = template.metadata.name or ""
    marks = {
        CREATED_BY_JOB_TEMPLATE: object_string(namespace, template_name),
        CREATED_BY_JOB_FLOW: object_string(namespace, flow.metadata.name or ""),
    }
    return Job(
        api_version=BATCH_V1ALPHA1,
        metadata=ObjectMeta(
            name=flow_job_name(flow.metadata.name or "", template_name),
            namespace=namespace,
            labels=dict(marks),
            annotations=dict(marks),
            owner_references=[reference_to(flow)],
        ),
        spec=template.spec,
    )


def template_of(job: Job) -> tuple[str, str] | None:
    """(namespace, template name) from the job's createdByJobTemplate label, when it has one."""
    value = (job.metadata.labels or {}).get(CREATED_BY_JOB_TEMPLATE, "")
    # A namespace is a DNS label (no dots), so the first dot is the separator; a template name may have dots.
    namespace, dot, name = value.partition(".")
    return (namespace, name) if dot and namespace and name else None

"""The review of JobFlows, JobTemplates and CronJobs: defaults (CronJob), then the rules, on CREATE and
UPDATE alike (Volcano's webhooks and CRD defaulting act on both); a DELETE is always allowed."""

from __future__ import annotations

from typing import Literal

from vc_proto.cronjob import CronJob
from vc_proto.flow import JobFlow, JobTemplate
from vc_validation.context import AdmissionContext
from vc_validation.cronjobs import mutate_cronjob, validate_cronjob
from vc_validation.jobflows import validate_jobflow
from vc_validation.jobtemplates import validate_jobtemplate
from vc_validation.verdict import Verdict, allow, decide

Workload = JobFlow | JobTemplate | CronJob


def review_workload(operation: Literal["CREATE", "UPDATE", "DELETE"], obj: Workload, ctx: AdmissionContext) -> Verdict:
    if operation == "DELETE":
        return allow(None)
    match obj:
        case JobFlow():
            return decide(validate_jobflow(obj), obj)
        case JobTemplate():
            return decide(validate_jobtemplate(obj, ctx.queues), obj)
        case CronJob():
            patched = mutate_cronjob(obj)
            return decide(validate_cronjob(patched, ctx.queues), patched)

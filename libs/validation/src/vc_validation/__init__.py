"""Tephra's admission rules: pure functions from (operation, object, old object, context) to a Verdict.

No I/O and no asyncio here. Admission's front-ends (the embedded NATS write API and the Kubernetes
webhook) call `review`; the services that act on stored objects call `job_violations` and
`pod_violations` (module `acting`), so nothing admission would refuse is acted on, whoever stored it,
and act on `admitted_job`, so what admission would have defaulted is run with its defaults.
"""

from __future__ import annotations

from vc_validation.acting import admitted_job, job_violations, pod_violations, summarize
from vc_validation.context import AdmissionContext, StaticContext
from vc_validation.cronjobs import mutate_cronjob, validate_cronjob
from vc_validation.derived_jobs import admit_derived_job
from vc_validation.jobflows import validate_jobflow
from vc_validation.jobs_mutate import mutate_job
from vc_validation.jobs_update import validate_job_update
from vc_validation.jobs_validate import validate_job_create, validate_job_spec
from vc_validation.jobtemplates import validate_jobtemplate
from vc_validation.jsonpatch import apply_json_patch, json_patch
from vc_validation.limits import MAX_REQUEST_BYTES, check_request_size
from vc_validation.podgroups import mutate_podgroup, validate_podgroup_create
from vc_validation.pods import validate_pod, validate_pod_create
from vc_validation.pods_mutate import ResourceGroup, mutate_pod
from vc_validation.queues_mutate import mutate_queue
from vc_validation.queues_validate import validate_queue_delete, validate_queue_write
from vc_validation.review import Operation, review
from vc_validation.verdict import Verdict, Violation

__all__ = [
    "MAX_REQUEST_BYTES",
    "AdmissionContext",
    "Operation",
    "ResourceGroup",
    "StaticContext",
    "Verdict",
    "Violation",
    "admit_derived_job",
    "admitted_job",
    "apply_json_patch",
    "check_request_size",
    "job_violations",
    "json_patch",
    "mutate_cronjob",
    "mutate_job",
    "mutate_pod",
    "mutate_podgroup",
    "mutate_queue",
    "pod_violations",
    "review",
    "summarize",
    "validate_cronjob",
    "validate_job_create",
    "validate_job_spec",
    "validate_job_update",
    "validate_jobflow",
    "validate_jobtemplate",
    "validate_pod",
    "validate_pod_create",
    "validate_podgroup_create",
    "validate_queue_delete",
    "validate_queue_write",
]

"""Tephra's admission rules: pure functions from (operation, object, old object, context) to a Verdict.

No I/O and no asyncio here; the embedded NATS front-end and the Kubernetes webhook both call `review`.
"""

from __future__ import annotations

from vc_admission.rules.context import AdmissionContext, StaticContext
from vc_admission.rules.jobs_mutate import mutate_job
from vc_admission.rules.jobs_update import validate_job_update
from vc_admission.rules.jobs_validate import validate_job_create
from vc_admission.rules.jsonpatch import apply_json_patch, json_patch
from vc_admission.rules.limits import MAX_REQUEST_BYTES, check_request_size
from vc_admission.rules.podgroups import mutate_podgroup, validate_podgroup_create
from vc_admission.rules.pods import validate_pod_create
from vc_admission.rules.pods_mutate import ResourceGroup, mutate_pod
from vc_admission.rules.queues_mutate import mutate_queue
from vc_admission.rules.queues_validate import validate_queue_delete, validate_queue_write
from vc_admission.rules.review import Operation, review
from vc_admission.rules.verdict import Verdict, Violation

__all__ = [
    "MAX_REQUEST_BYTES",
    "AdmissionContext",
    "Operation",
    "ResourceGroup",
    "StaticContext",
    "Verdict",
    "Violation",
    "apply_json_patch",
    "check_request_size",
    "json_patch",
    "mutate_job",
    "mutate_pod",
    "mutate_podgroup",
    "mutate_queue",
    "review",
    "validate_job_create",
    "validate_job_update",
    "validate_pod_create",
    "validate_podgroup_create",
    "validate_queue_delete",
    "validate_queue_write",
]

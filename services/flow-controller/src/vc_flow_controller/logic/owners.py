"""Who a vcjob belongs to: its controller owner reference (a JobFlow or a CronJob), as Kubernetes'
garbage collector and `metav1.IsControlledBy` read it. Pure."""

from __future__ import annotations

from typing import Final

from vc_proto.batch import BATCH_V1ALPHA1, Job
from vc_proto.cronjob import CronJob
from vc_proto.flow import FLOW_V1ALPHA1, JobFlow
from vc_proto.meta import OwnerReference

# (kind, namespace, name) of a JobFlow, JobTemplate or CronJob: the flow controller's work keys.
OwnerKey = tuple[str, str, str]
# The owner kinds whose jobs this controller makes, with the apiVersion a controller reference names.
OWNER_API_VERSIONS: Final = {"JobFlow": FLOW_V1ALPHA1, "CronJob": BATCH_V1ALPHA1}


def controller_ref(job: Job) -> OwnerReference | None:
    return next((ref for ref in job.metadata.owner_references or () if ref.controller), None)


def owner_key(job: Job) -> OwnerKey | None:
    """The JobFlow or CronJob that controls this job, when one does."""
    ref = controller_ref(job)
    if ref is None or OWNER_API_VERSIONS.get(ref.kind) != ref.api_version:
        return None
    return (ref.kind, job.metadata.namespace or "", ref.name)


def is_controlled_by(job: Job, owner: JobFlow | CronJob) -> bool:
    ref = controller_ref(job)
    return ref is not None and ref.uid == owner.metadata.uid and ref.kind == type(owner).__name__


def reference_to(owner: JobFlow | CronJob) -> OwnerReference:
    """`metav1.NewControllerRef`: controller and blockOwnerDeletion set."""
    kind = type(owner).__name__
    return OwnerReference(
        api_version=OWNER_API_VERSIONS[kind],
        kind=kind,
        name=owner.metadata.name or "",
        uid=owner.metadata.uid or "",
        controller=True,
        block_owner_deletion=True,
    )


def phase_of(job: Job) -> str:
    return (job.status.state.phase if job.status and job.status.state else None) or ""
